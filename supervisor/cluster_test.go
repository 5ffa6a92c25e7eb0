package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	etcdstore "github.com/cyberia-to/cyber-supervisor/supervisor/store/etcd"
)

var clusterPrefix atomic.Uint64

// spinLimits let spin.nox run for seconds (it holds almost nothing, so
// the memory limit does not matter to it).
var spinLimits = protocol.Limits{Reductions: 1 << 60, MemoryBytes: 12 << 30}

// Leases of the tests' hosts: long enough that a loaded machine's stalls
// do not fence a host on their own (the tests take registrations away
// themselves), short for a host whose departure a test waits out.
const (
	steadyTTL = 10 * time.Second
	departTTL = 2 * time.Second
)

// cluster is n supervisors (separate homes, real launchers) sharing one
// job store on a real etcd.
func cluster(t *testing.T, n int) ([]*testSup, *etcdtest.Server, string) {
	return clusterTTL(t, n, steadyTTL)
}

func clusterTTL(t *testing.T, n int, ttl time.Duration) ([]*testSup, *etcdtest.Server, string) {
	t.Helper()
	requireClusterHost(t)
	srv := etcdtest.Start(t, etcdtest.Options{})
	prefix := fmt.Sprintf("/cluster-%d/", clusterPrefix.Add(1))
	var sups []*testSup
	for i := range n {
		sups = append(sups, openOnEtcd(t, t.TempDir(), srv, prefix, fmt.Sprintf("host-%d", i+1), ttl))
	}
	return sups, srv, prefix
}

// requireClusterHost: the cluster tests need isolation (real launchers);
// with REQUIRE_ETCD=1 (CI) its absence fails them, as REQUIRE_ISOLATION=1
// would: they never skip there.
func requireClusterHost(t testing.TB) {
	t.Helper()
	if os.Getenv("REQUIRE_ETCD") == "1" {
		t.Setenv("REQUIRE_ISOLATION", "1")
	}
	requireIsolation(t)
}

func openOnEtcd(t *testing.T, home string, srv *etcdtest.Server, prefix, host string, ttl time.Duration) *testSup {
	t.Helper()
	trust := store.NewTrust()
	st, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: prefix,
		LeaseTTL: ttl, RequestTimeout: 2 * time.Second, Trust: trust})
	if err != nil {
		t.Fatal(err)
	}
	return open(t, home, launch.IsolationRequired, func(c *Config) { c.Store, c.Trust, c.HostID = st, trust, host })
}

// A job submitted to any host runs on whichever takes it; every job is
// accepted once, on one host, and every host's status and waits see it.
func TestClusterSharedQueue(t *testing.T) {
	sups, _, _ := cluster(t, 3)
	defer func() {
		for _, s := range sups {
			s.close(t)
		}
	}()
	gens := map[uint64]bool{}
	for _, s := range sups {
		if s.Generation() == 0 || gens[s.Generation()] {
			t.Fatalf("generations not distinct: %d", s.Generation())
		}
		gens[s.Generation()] = true
	}
	const jobs = 12
	for i := range jobs {
		sups[i%3].submit(t, spec(t, fmt.Sprintf("q%d", i), protocol.OpExecute, add2, []uint64{uint64(i), 1}, protocol.Limits{}, nil))
	}
	ran := map[string]int{}
	for i := range jobs {
		// Waited for through a host other than the one it was submitted to.
		st := sups[(i+1)%3].wait(t, fmt.Sprintf("q%d", i))
		if st.Job.State != lifecycle.Accepted || len(st.Attempts) != 1 {
			t.Fatalf("q%d: %s, %d attempts, %+v", i, st.Job.State, len(st.Attempts), st.Job.Error)
		}
		a := st.Attempts[0]
		if a.Host == "" || !gens[a.Generation] {
			t.Fatalf("q%d: attempt host %q generation %d", i, a.Host, a.Generation)
		}
		// Its claim, made with it on etcd, names its generation and boot.
		if len(st.Claims) != 1 || st.Claims[0].Generation != a.Generation || st.Claims[0].Worker.Executor.BootID != a.Boot {
			t.Fatalf("q%d: claims %+v, attempt %+v", i, st.Claims, a)
		}
		ran[a.Host]++
	}
	t.Logf("jobs per host: %v", ran)
	hosts, err := sups[0].Hosts(context.Background())
	if err != nil || len(hosts) != 3 {
		t.Fatalf("hosts: %+v %v", hosts, err)
	}
	for _, h := range hosts {
		if h.LeaseTTL < time.Second || h.LeaseLeft <= 0 || h.LeaseLeft > h.LeaseTTL {
			t.Fatalf("host %s: lease TTL %v, left %v", h.Host, h.LeaseTTL, h.LeaseLeft)
		}
	}
	// Each host's metrics name it and count its etcd traffic.
	for _, s := range sups {
		var b strings.Builder
		if err := s.WritePrometheus(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`cyber_supervisor_host_info{host="` + s.HostID() + `",boot="` + s.Boot() + `"`, `store="etcd"} 1`,
			"cyber_supervisor_etcd_requests_total{kind=\"commit\"}", "cyber_supervisor_cluster_fenced_total 0"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s's metrics lack %s", s.HostID(), want)
			}
		}
	}
	ev, err := sups[2].Events(context.Background(), "q0")
	if err != nil {
		t.Fatal(err)
	}
	named := false
	for _, e := range ev {
		named = named || (e.Attempt == 1 && e.Host != "")
	}
	if !named {
		t.Fatalf("no event names the host: %+v", ev)
	}
}

// A host that dies (no clean shutdown) loses its lease; another host
// marks its running attempt unknown, never runs it again, and queues a
// new attempt where the retry policy allows it.
func TestClusterDepartedHostRecovered(t *testing.T) {
	sups, srv, prefix := clusterTTL(t, 1, departTTL)
	a := sups[0]
	spin := spec(t, "dep1", protocol.OpExecute, loop(t, "spin.nox"), []uint64{23}, spinLimits, nil)
	if _, _, err := a.Submit(context.Background(), SubmitRequest{Spec: spin, Retry: &store.RetryPolicy{MaxAttempts: 2}}); err != nil {
		t.Fatal(err)
	}
	once := a.submit(t, spec(t, "dep2", protocol.OpExecute, loop(t, "spin.nox"), []uint64{23}, spinLimits, nil))
	a.waitState(t, "dep1", lifecycle.Running)
	a.waitState(t, once, lifecycle.Running)
	crash(a)
	b := openOnEtcd(t, t.TempDir(), srv, prefix, "host-b", steadyTTL)
	defer b.close(t)
	st := b.wait(t, once)
	if st.Job.State != lifecycle.Unknown || st.Attempts[0].State != lifecycle.Unknown || st.Attempts[0].Host != "host-1" {
		t.Fatalf("dep2 after its host died: %s, %+v", st.Job.State, st.Attempts[0])
	}
	st = b.wait(t, "dep1")
	if st.Job.State != lifecycle.Accepted || len(st.Attempts) != 2 || st.Attempts[0].State != lifecycle.Unknown || st.Attempts[1].Host != "host-b" {
		t.Fatalf("dep1 after its host died: %s, %+v", st.Job.State, st.Attempts)
	}
}

// crash stops a supervisor as kill -9 would, for its store: running
// attempts end without being recorded, the registration is not deleted.
func crash(s *testSup) {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.stop()
	<-s.stopped
	s.background.Wait()
	s.mu.Lock()
	for _, a := range s.active {
		a.kill()
	}
	s.mu.Unlock()
	s.store.Close() // the etcd handle: its keepalive stops, the lease runs out
	s.runs.Wait()
	s.teardowns.Wait()
	s.sandboxes.Close()
	s.cfg.Launcher.Close()
	s.Supervisor.home.bolt.Close() // and with it the home's lock
}

// A host whose registration is lost while it runs (its lease expired: a
// pause, a partition) stops: it kills its workers, accepts nothing, and
// joins again as a new boot with a larger generation; the other host
// recovers the attempt, and the job is accepted once.
func TestClusterFencedHostStops(t *testing.T) {
	sups, _, _ := cluster(t, 2)
	defer func() {
		for _, s := range sups {
			s.close(t)
		}
	}()
	a, b := sups[0], sups[1]
	// b takes nothing until a holds the job.
	b.mu.Lock()
	b.isFenced = true
	b.mu.Unlock()
	spin := spec(t, "fence1", protocol.OpExecute, loop(t, "spin.nox"), []uint64{23}, spinLimits, nil)
	if _, _, err := a.Submit(context.Background(), SubmitRequest{Spec: spin, Retry: &store.RetryPolicy{MaxAttempts: 3}}); err != nil {
		t.Fatal(err)
	}
	a.waitState(t, "fence1", lifecycle.Running)
	gen := a.Generation()
	b.mu.Lock()
	b.isFenced = false
	b.mu.Unlock()
	// The registration goes behind a's back, as the lease's expiry would.
	if err := revokeRegistration(a); err != nil {
		t.Fatal(err)
	}
	st := b.wait(t, "fence1")
	if st.Job.State != lifecycle.Accepted {
		t.Fatalf("fence1: %s %+v", st.Job.State, st.Job.Error)
	}
	accepted := 0
	for _, at := range st.Attempts {
		if at.State == lifecycle.Accepted {
			accepted++
		}
		if at.Generation == gen && at.State != lifecycle.Unknown {
			t.Errorf("the fenced boot's attempt ended %s, want unknown", at.State)
		}
	}
	if accepted != 1 || st.Attempts[0].State != lifecycle.Unknown {
		t.Fatalf("attempts %+v", st.Attempts)
	}
	deadline := time.Now().Add(30 * time.Second)
	for a.Generation() == gen || a.fenced() {
		if time.Now().After(deadline) {
			t.Fatal("the fenced host did not join again")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if a.Generation() <= gen {
		t.Fatalf("new generation %d after %d", a.Generation(), gen)
	}
	// The new boot works.
	if st := a.wait(t, a.submit(t, spec(t, "fence2", protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{}, nil))); st.Job.State != lifecycle.Accepted {
		t.Fatalf("after rejoining: %s", st.Job.State)
	}
}

func revokeRegistration(s *testSup) error {
	r, ok := s.cluster.(interface {
		RevokeForTest(context.Context) error
	})
	if !ok {
		return errors.New("the store cannot revoke its lease")
	}
	return r.RevokeForTest(context.Background())
}

// A cancel asked of one host reaches the attempt running on another.
func TestClusterCancelAcrossHosts(t *testing.T) {
	sups, _, _ := cluster(t, 2)
	defer func() {
		for _, s := range sups {
			s.close(t)
		}
	}()
	a, b := sups[0], sups[1]
	b.mu.Lock()
	b.isFenced = true // b takes nothing: the job runs on a
	b.mu.Unlock()
	id := a.submit(t, spec(t, "cx", protocol.OpExecute, loop(t, "spin.nox"), []uint64{60}, spinLimits, nil))
	a.waitState(t, id, lifecycle.Running)
	// Any host lists every host with its boot, generation and slots, and
	// the running attempt on the host that runs it.
	hosts, err := b.Hosts(context.Background())
	if err != nil || len(hosts) != 2 {
		t.Fatalf("hosts: %+v %v", hosts, err)
	}
	for _, h := range hosts {
		s := a
		if h.Host == b.HostID() {
			s = b
		}
		running := fmt.Sprint(h.Running)
		if h.Host != s.HostID() || h.Boot != s.Boot() || h.Generation != s.Generation() || h.Slots != s.cfg.Slots || h.Self != (s == b) ||
			(s == a) != (running == "["+id+"/1]") || (s == b) != (running == "[]") {
			t.Errorf("host %+v, want %s boot %s generation %d, %d slots", h, s.HostID(), s.Boot(), s.Generation(), s.cfg.Slots)
		}
	}
	if _, err := b.Cancel(context.Background(), id, "from b"); err != nil {
		t.Fatal(err)
	}
	st := b.wait(t, id)
	if st.Job.State != lifecycle.Cancelled || st.Attempts[0].State != lifecycle.Cancelled {
		t.Fatalf("cancelled through another host: %s / %s", st.Job.State, st.Attempts[0].State)
	}
	b.mu.Lock()
	b.isFenced = false
	b.mu.Unlock()
}

// Host acts stay local: a home's neuron (and with it its grants, progs,
// invocations and host-act records) lives in the home's own store, which
// the shared store refuses to hold; another host sees no neuron of it.
// Job attempts' claims are the shared store's: signed by the neuron of
// the host that prepared them.
func TestClusterHostActsStayLocal(t *testing.T) {
	requireClusterHost(t)
	srv := etcdtest.Start(t, etcdtest.Options{})
	prefix := fmt.Sprintf("/cluster-%d/", clusterPrefix.Add(1))
	homeA := t.TempDir()
	initNeuron(t, homeA)
	a := openOnEtcd(t, homeA, srv, prefix, "host-a", steadyTTL)
	defer a.close(t)
	b := openOnEtcd(t, t.TempDir(), srv, prefix, "host-b", steadyTTL)
	defer b.close(t)
	ctx := context.Background()
	root, err := a.Fencing().Root(ctx)
	if err != nil || root.Network != "testnet" || root.Worker == nil || root.Worker.Executor.BootID != a.Boot() {
		t.Fatalf("a's neuron: %+v %v", root, err)
	}
	if r, err := b.Fencing().Root(ctx); !errors.Is(err, fencing.ErrMissing) {
		t.Fatalf("b sees a neuron: %+v %v", r, err)
	}
	for _, s := range []*testSup{a, b} {
		err := s.cluster.View(ctx, func(tx store.Tx) error {
			if _, ok := tx.(store.NeuronTx); ok {
				t.Error("the shared store's transactions hold neuron records")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	b.mu.Lock()
	b.isFenced = true // the job runs on a
	b.mu.Unlock()
	st := b.wait(t, b.submit(t, spec(t, "local-acts", protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{}, nil)))
	b.mu.Lock()
	b.isFenced = false
	b.mu.Unlock()
	if st.Job.State != lifecycle.Accepted || len(st.Claims) != 1 || st.Attempts[0].Host != "host-a" {
		t.Fatalf("%s on %q, claims %+v", st.Job.State, st.Attempts[0].Host, st.Claims)
	}
	if c := st.Claims[0]; c.Signature == nil || c.Worker.Network != "testnet" || c.Worker.Executor.BootID != a.Boot() || c.Generation != a.Generation() {
		t.Fatalf("a's claim read through b: %+v", c)
	}
}

// An attempt whose running record fails is never given to its worker,
// whatever the failure: here another host recovered the attempt (marked
// it unknown and queued the job again, as it does for a boot it takes for
// gone) between its take and its launch, so the record is refused on
// what etcd holds rather than on the registration. The job's next
// attempt runs; the first never did.
func TestClusterRunningRecordRefusedIsNotDispatched(t *testing.T) {
	requireClusterHost(t)
	srv := etcdtest.Start(t, etcdtest.Options{})
	prefix := fmt.Sprintf("/cluster-%d/", clusterPrefix.Add(1))
	other, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: prefix, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var recovered atomic.Bool
	trust := store.NewTrust()
	st, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: prefix,
		LeaseTTL: steadyTTL, RequestTimeout: 2 * time.Second, Trust: trust})
	if err != nil {
		t.Fatal(err)
	}
	s := openWith(t, t.TempDir(), launch.IsolationRequired, func(c *Config) { c.Store, c.Trust, c.HostID = st, trust, "host-1" }, func(s *Supervisor) {
		s.hooks.afterTake = func(time.Duration) {
			if recovered.Swap(true) {
				return
			}
			err := other.Update(context.Background(), func(tx store.Tx) error {
				at, err := tx.Attempt("rr", 1)
				if err != nil {
					return err
				}
				at.State, at.Ended = lifecycle.Unknown, time.Now().UTC()
				if err := tx.PutAttempt(at); err != nil {
					return err
				}
				j, err := tx.Job("rr")
				if err != nil {
					return err
				}
				return tx.Enqueue(j.ID, j.Priority, j.Seq)
			})
			if err != nil {
				t.Errorf("recover attempt 1 through the other handle: %v", err)
			}
		}
	})
	defer s.close(t)
	if _, _, err := s.Submit(context.Background(), SubmitRequest{Spec: spec(t, "rr", protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{}, nil),
		Retry: &store.RetryPolicy{MaxAttempts: 2}}); err != nil {
		t.Fatal(err)
	}
	end := s.wait(t, "rr")
	if end.Job.State != lifecycle.Accepted || end.Job.Accepted != 2 || end.Attempts[0].State != lifecycle.Unknown {
		t.Fatalf("job %s accepted %d, attempts %+v", end.Job.State, end.Job.Accepted, end.Attempts)
	}
	wantAttemptsDriven(t, s, 1) // attempt 2's
}

// wantAttemptsDriven checks how many attempts were given to a worker
// (each driven one is timed once), once every attempt goroutine ended.
func wantAttemptsDriven(t *testing.T, s *testSup, n int) {
	t.Helper()
	s.runs.Wait()
	var b strings.Builder
	if err := s.WritePrometheus(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), fmt.Sprintf("\ncyber_supervisor_attempt_seconds_count %d\n", n)) {
		t.Errorf("attempts driven, want %d:\n%s", n, grepLines(b.String(), "attempt_seconds_count"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
