package integration

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// Two homes given one --host-id on one etcd. The second daemon is refused
// at its start (busy, exit 4, naming the first home) and the first goes
// on serving. A daemon fenced while the other home took the id stops
// (exit 1) when it finds that out, rather than serve and never dispatch.
func TestHostIDOfAnotherHomeIsRefused(t *testing.T) {
	requireIsolation(t)
	srv := etcdtest.Start(t, etcdtest.Options{})
	h1, h2 := newHome(t), newHome(t)
	// A short lease, so that a paused daemon loses it within the test;
	// each home its own cgroups.
	flags := func(cg string) []string {
		return []string{"--host-id", "twin", "--store", "etcd://" + srv.Endpoint + "/twin", "--lease-ttl", "1s",
			"--pool", "0", "--cgroup-name", cgroupName + cg}
	}
	d1 := startDaemon(t, h1, 1, flags("-a")...)

	// The second home is refused, and replaces nothing.
	r := cli(t, append([]string{"--home", h2, "--format", "json", "serve", "--isolation", "required", "--worker", workerBin}, flags("-b")...)...)
	if r.code != 4 || !strings.Contains(r.stdout, `"code":"busy"`) || !strings.Contains(r.stdout, "registered by another home") ||
		!strings.Contains(r.stdout, h1) || !strings.Contains(r.stdout, "--host-id") {
		t.Fatalf("a second home with the same --host-id: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	ctx := context.Background()
	submitAndAccept := func(d *daemon, id string) {
		t.Helper()
		if _, err := d.client.Submit(ctx, jobSpec(t, id, protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{1, 2}, protocol.Limits{}), 0, nil); err != nil {
			t.Fatalf("submit %s: %v", id, err)
		}
		st, err := d.client.WaitEnd(ctx, id)
		if err != nil || st.Job.State != lifecycle.Accepted {
			t.Fatalf("job %s: %+v %v\n%s", id, st, err, d.log)
		}
	}
	submitAndAccept(d1, "twin-1")
	env := cliJSON(t, 0, "--home", h1, "hosts")
	if !strings.Contains(string(env.Result), `"home":`) || !strings.Contains(string(env.Result), h1) {
		t.Fatalf("hosts does not name the home: %s", env.Result)
	}

	// The first daemon is paused past its lease; the second home takes
	// the id once etcd has expired the first's registration.
	d1.cmd.Process.Signal(syscall.SIGSTOP)
	var d2 *daemon
	for deadline := time.Now().Add(30 * time.Second); d2 == nil; {
		if time.Now().After(deadline) {
			t.Fatal("the paused daemon's registration never expired")
		}
		d2 = serveOrRefused(t, h2, append([]string{"--worker", workerBin, "--slots", "1", "--log-level", "warn"}, flags("-b")...))
	}
	// The first wakes up fenced and cannot join again: it stops, exit 1.
	d1.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case err := <-d1.done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("the fenced daemon: %v, want exit 1\n%s", err, d1.log)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the fenced daemon kept running without its host id\n%s", d1.log)
	}
	if log := d1.log.String(); !strings.Contains(log, "join the cluster again") || !strings.Contains(log, "registered by another home") {
		t.Fatalf("the fenced daemon's log does not say why it stopped:\n%s", log)
	}
	submitAndAccept(d2, "twin-2")
	d2.stop(t)
}

// serveOrRefused starts serve on home and returns it once it answers, or
// nil once it was refused as busy (exit 4: the host id is another home's).
func serveOrRefused(t *testing.T, home string, args []string) *daemon {
	t.Helper()
	d := spawnDaemon(t, supervisorBin, home, nil, args...)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-d.done:
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 4 && strings.Contains(d.log.String(), "registered by another home") {
				return nil
			}
			t.Fatalf("serve on %s: %v\n%s", home, err, d.log)
		default:
		}
		if _, err := d.client.List(context.Background(), ""); err == nil {
			return d
		}
	}
	d.kill9()
	t.Fatalf("serve on %s neither came up nor stopped\n%s", home, d.log)
	return nil
}
