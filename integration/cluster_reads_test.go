package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// Issue #27, item 3. With etcd paused (SIGSTOP: connections stay open,
// nothing answers), `list`, `status`, `result` and `events` through a
// daemon on it hung for minutes. Now each answers busy (exit 4) naming
// etcd once etcd has not answered for the daemon's read timeout (5 s),
// and `events --follow` of a running job stops the same way instead of
// waiting silently. Once etcd answers again, so do they.
func TestClusterReadsAnswerWhileEtcdIsDown(t *testing.T) {
	requireIsolation(t)
	home := newHome(t) // its leak check runs after etcd's cleanup stops etcd
	e := startLoopbackEtcd(t)
	d := startDaemon(t, home, 1, "--pool", "0", "--host-id", "reads-1", "--lease-ttl", "2s",
		"--store", "etcd://"+e.endpoint+"/reads")
	defer d.stop(t)
	ctx := context.Background()
	if _, err := d.client.Submit(ctx, jobSpec(t, "done", protocol.OpProve, "[5 [[0 2] [0 6]]]", []uint64{3, 5}, protocol.Limits{}), 0, nil); err != nil {
		t.Fatal(err)
	}
	if st, err := d.client.WaitEnd(ctx, "done"); err != nil || st.Job.State != lifecycle.Accepted {
		t.Fatalf("job done: %+v %v", st, err)
	}
	// A job running while etcd goes: its follower must not wait silently.
	spin := jobSpec(t, "live", protocol.OpExecute, program(t, "spin.nox"), []uint64{40}, protocol.Limits{WallTimeMS: 120000})
	if _, err := d.client.Submit(ctx, spin, 0, &apitypes.RetryRequest{MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		st, err := d.client.Status(ctx, "live")
		if err == nil && st.Job.State == lifecycle.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job live did not start: %+v %v", st, err)
		}
	}
	follow := startCLI(t, "--home", home, "events", "--follow", "live")

	e.signal(syscall.SIGSTOP)
	paused := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			e.signal(syscall.SIGCONT)
			resumed = true
		}
	}
	defer resume()
	reads := [][]string{{"list"}, {"status", "done"}, {"result", "done"}, {"events", "done"}}
	var wg sync.WaitGroup
	results := make([]cliResult, len(reads))
	took := make([]time.Duration, len(reads))
	for i, args := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			results[i] = cliBounded(t, time.Minute, append([]string{"--home", home, "--format", "json"}, args...)...)
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	for i, args := range reads {
		r := results[i]
		var env protocol.Envelope
		json.Unmarshal([]byte(r.stdout), &env)
		if r.code != 4 || env.Error == nil || env.Error.Code != "busy" || !strings.Contains(env.Error.Message, "etcd") ||
			!strings.Contains(env.Error.Message, "did not answer") {
			t.Errorf("%v while etcd is paused: exit %d after %s\n%s%s", args, r.code, took[i].Round(time.Millisecond), r.stdout, r.stderr)
			continue
		}
		t.Logf("%v: busy after %s: %s", args, took[i].Round(time.Millisecond), env.Error.Message)
	}
	code := follow.wait(t)
	if code != 4 || !strings.Contains(follow.stderrText(), "etcd") {
		t.Errorf("events --follow of a running job while etcd is paused: exit %d\n%s", code, follow.stderrText())
	} else {
		t.Logf("events --follow stopped %s after the pause: %s", time.Since(paused).Round(time.Millisecond), lastLine(follow.stderrText()))
	}

	resume()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		r := cliBounded(t, time.Minute, "--home", home, "--format", "json", "status", "done")
		if r.code == 0 && strings.Contains(r.stdout, `"state":"accepted"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status once etcd answers again: %+v", r)
		}
	}
	// The running job's host fenced itself while etcd was paused (its
	// lease ran out): the attempt ends unknown, the job with it.
	if st, err := d.client.WaitEnd(ctx, "live"); err != nil || !st.Job.State.Terminal() {
		t.Fatalf("job live: %+v %v", st, err)
	}
}

// loopbackEtcd is etcd as a process of its own on loopback
// (etcd-test-server), to be paused and resumed.
type loopbackEtcd struct {
	*proc
	endpoint string
}

func startLoopbackEtcd(t *testing.T) *loopbackEtcd {
	t.Helper()
	bin := etcdServer(t)
	client := fmt.Sprintf("127.0.0.1:%d", etcdtest.FreePort(t))
	peer := fmt.Sprintf("127.0.0.1:%d", etcdtest.FreePort(t))
	logs := &testenv.Buffer{}
	p, err := startProc("etcd", exec.Command(bin, "-data-dir", filepath.Join(t.TempDir(), "etcd"), "-listen", client, "-peer", peer), logs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.alive() {
			p.signal(syscall.SIGCONT)
			p.signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				p.kill9()
			}
		}
	})
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(logs.String(), "ready"); time.Sleep(20 * time.Millisecond) {
		if !p.alive() || time.Now().After(deadline) {
			t.Fatalf("etcd did not start: %v\n%s", p.err, logs)
		}
	}
	return &loopbackEtcd{proc: p, endpoint: client}
}

// cliBounded is cli with a bound of its own: a command still running
// after it is killed (and its exit status is -1).
func cliBounded(t testing.TB, bound time.Duration, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	out, errb, code, err := testbin.Capture(exec.CommandContext(ctx, supervisorBin, args...))
	if ctx.Err() != nil {
		return cliResult{out, errb + fmt.Sprintf("\n(still running after %s: killed)", bound), -1}
	}
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return cliResult{out, errb, code}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
