package integration

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// A drain on a host of a cluster hands what it runs back to the shared
// queue: `drain --timeout 0s` stops taking jobs, interrupts its running
// attempts and exits 0, and the other host takes the jobs at once (no
// restart of the drained host needed), each without losing an attempt
// of its one-attempt policy. Before, there was no drain: a stop of the
// host ended a one-attempt job cancelled, and nothing else could take
// it.
func TestClusterDrainHandsBack(t *testing.T) {
	requireClusterHost(t)
	t.Parallel() // its lab, daemons and leak check are its own (netLab)
	etcdServer(t)
	lab := newNetLab(t, 2)
	e := startEtcd(t, lab, filepath.Join(t.TempDir(), "etcd"))
	d1 := newClusterDaemon(t, lab, 1, 5*time.Second)
	d2 := newClusterDaemon(t, lab, 2, 5*time.Second)
	if err := d1.start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids := []string{"moved-1", "moved-2"}
	for _, id := range ids {
		spec := jobSpec(t, id, protocol.OpExecute, program(t, "spin.nox"), []uint64{60}, protocol.Limits{Reductions: 1 << 60})
		if _, err := d1.client.Submit(ctx, spec, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitHost := func(d *clusterDaemon, id string, n uint32, host string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			st, err := d.client.Status(ctx, id)
			if err == nil && st.Job.State == lifecycle.Running && st.Job.Attempts == n && st.Attempts[n-1].Host == host {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never ran attempt %d on %s: %+v %v", id, n, host, st, err)
			}
		}
	}
	for _, id := range ids {
		waitHost(d1, id, 1, d1.host)
	}
	if err := d2.start(); err != nil {
		t.Fatal(err)
	}

	env := cliJSON(t, 0, "--home", d1.home, "drain", "--timeout", "0s")
	var v drainView
	if err := json.Unmarshal(env.Result, &v); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.HandedBack, ids) || len(v.Ended) != 0 || !v.Exited {
		t.Fatalf("drain of d1: %s", env.Result)
	}
	<-d1.done
	if d1.err != nil {
		t.Errorf("the drained daemon: %v", d1.err)
	}
	for _, id := range ids {
		waitHost(d2, id, 2, d2.host)
		st, err := d2.client.Status(ctx, id)
		if err != nil || st.Job.InterruptedAttempts != 1 || st.Job.Retry.MaxAttempts != 1 || st.Attempts[0].State != lifecycle.Cancelled {
			t.Fatalf("%s on d2: %+v %v", id, st, err)
		}
		if _, err := d2.client.Cancel(ctx, id, "test done"); err != nil {
			t.Fatal(err)
		}
		if _, err := d2.client.WaitEnd(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := d2.stop(); err != nil {
		t.Error(err)
	}
	stopEtcdLeavingNothing(t, e, []*clusterDaemon{d1, d2})
}
