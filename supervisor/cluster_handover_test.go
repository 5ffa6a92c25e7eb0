package supervisor

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	etcdstore "github.com/cyberia-to/cyber-supervisor/supervisor/store/etcd"
)

// A boot that loses its registration after an attempt's running record
// committed and before its worker is given the job (a host paused there
// past its lease, whose keepalive noticed first) gives the worker
// nothing: attempt 1 never runs, it is recovered as unknown, and attempt
// 2, of the boot that joined again, is the one that runs and is accepted.
func TestClusterLostRegistrationIsNotHandedOver(t *testing.T) {
	requireClusterHost(t)
	srv := etcdtest.Start(t, etcdtest.Options{})
	prefix := fmt.Sprintf("/cluster-%d/", clusterPrefix.Add(1))
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	trust := store.NewTrust()
	st, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: prefix,
		LeaseTTL: steadyTTL, RequestTimeout: 2 * time.Second, Trust: trust})
	if err != nil {
		t.Fatal(err)
	}
	var lostOnce atomic.Bool
	s := openWith(t, t.TempDir(), launch.IsolationRequired, func(c *Config) { c.Store, c.Trust, c.HostID = st, trust, "host-h" }, func(s *Supervisor) {
		s.hooks.afterRunning = func(job string, n uint32) {
			if lostOnce.Swap(true) {
				return
			}
			m := s.membership()
			// etcd ends the boot's lease (the only one: nothing else
			// here joined), and the keepalive hears of it.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			leases, err := raw.Leases(ctx)
			if err != nil || len(leases.Leases) != 1 {
				t.Errorf("leases: %+v %v", leases, err)
				return
			}
			if _, err := raw.Revoke(ctx, leases.Leases[0].ID); err != nil {
				t.Errorf("revoke: %v", err)
				return
			}
			select {
			case <-m.Lost():
			case <-ctx.Done():
				t.Errorf("the boot never noticed its lease was revoked")
			}
		}
	})
	defer s.close(t)
	if _, _, err := s.Submit(context.Background(), SubmitRequest{Spec: spec(t, "ho", protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{}, nil),
		Retry: &store.RetryPolicy{MaxAttempts: 2}}); err != nil {
		t.Fatal(err)
	}
	end := s.wait(t, "ho")
	if end.Job.State != lifecycle.Accepted || end.Job.Accepted != 2 || end.Attempts[0].State != lifecycle.Unknown {
		t.Fatalf("job %s accepted %d, attempts %+v", end.Job.State, end.Job.Accepted, end.Attempts)
	}
	wantAttemptsDriven(t, s, 1) // attempt 2's
}
