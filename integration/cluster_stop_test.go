package integration

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// A daemon stopped (SIGTERM) while etcd does not answer stops anyway:
// its lease runs out, its attempts are fenced, and it exits cleanly,
// leaving nothing of its workers. Once etcd is back, the next start
// recovers the attempt it was running and the job gets another one.
func TestClusterStopWhileEtcdIsDown(t *testing.T) {
	requireClusterHost(t)
	t.Parallel() // its lab, daemons and leak check are its own (netLab)
	etcdServer(t)
	lab := newNetLab(t, 1)
	e := startEtcd(t, lab, filepath.Join(t.TempDir(), "etcd"))
	d := newClusterDaemon(t, lab, 1, 2*time.Second)
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec := jobSpec(t, "long", protocol.OpExecute, program(t, "spin.nox"), []uint64{22}, protocol.Limits{})
	if _, err := d.client.Submit(ctx, spec, 0, &apitypes.RetryRequest{MaxAttempts: 2}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := d.client.Status(ctx, "long")
		if err == nil && st.Job.State == lifecycle.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not start: %v", err)
		}
	}
	e.signal(syscall.SIGSTOP)
	defer e.signal(syscall.SIGCONT)
	stopped := time.Now()
	d.signal(syscall.SIGTERM)
	select {
	case <-d.done:
		t.Logf("stopped %s after SIGTERM", time.Since(stopped).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		d.signal(syscall.SIGQUIT) // its goroutines, in the log
		<-d.done
		t.Fatalf("the daemon did not stop within 30 s of SIGTERM while etcd was paused\n%s", tail(d.logs.String(), 30000))
	}
	if d.err != nil {
		t.Errorf("exit: %v\n%s", d.err, tail(d.logs.String(), 4000))
	}
	if left := append(d.leftovers(), d.workers()...); len(left) > 0 {
		t.Errorf("left after a clean stop: %v", left)
	}
	e.signal(syscall.SIGCONT)
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	defer d.stop()
	end, err := d.client.WaitEnd(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.client.Status(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	if end.Job.State != lifecycle.Accepted || len(st.Attempts) != 2 || st.Attempts[0].State != lifecycle.Unknown {
		t.Errorf("after the restart: job %s, attempts %+v", end.Job.State, st.Attempts)
	}
}
