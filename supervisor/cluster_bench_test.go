package supervisor

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	etcdstore "github.com/cyberia-to/cyber-supervisor/supervisor/store/etcd"
)

// BenchmarkClusterTrivialJobs: trivial isolated execute jobs through 1, 2
// and 3 supervisors (2 slots each, real launchers, separate homes) on one
// etcd, beside one supervisor on its own bbolt store, in one run: jobs/s,
// CPU per job (this process: the supervisors and the embedded etcd, and
// the workers), etcd requests per job, and the attempt-taking latency
// (the take's transaction) p50/p99. etcd syncs its writes as bbolt does.
func BenchmarkClusterTrivialJobs(b *testing.B) {
	requireClusterHost(b)
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	srv := etcdtest.Start(b, etcdtest.Options{Fsync: true})
	b.Run("bbolt-1", func(b *testing.B) { benchCluster(b, nil, 1) })
	for n := 1; n <= 3; n++ {
		b.Run(fmt.Sprintf("etcd-%d", n), func(b *testing.B) { benchCluster(b, srv, n) })
	}
}

func benchCluster(b *testing.B, srv *etcdtest.Server, hosts int) {
	prefix := fmt.Sprintf("/bench-%d/", clusterPrefix.Add(1))
	var (
		sups   []*testSup
		stores []*etcdstore.Store
		mu     sync.Mutex
		takes  []time.Duration
	)
	for i := range hosts {
		sups = append(sups, open(b, b.TempDir(), launch.IsolationRequired, func(c *Config) {
			c.Slots = 2
			if srv != nil {
				c.Trust = store.NewTrust()
				st, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: prefix, Trust: c.Trust})
				if err != nil {
					b.Fatal(err)
				}
				stores = append(stores, st)
				c.Store, c.HostID = st, fmt.Sprintf("bench-%d", i)
			}
		}))
		sups[i].hooks.afterTake = func(d time.Duration) { mu.Lock(); takes = append(takes, d); mu.Unlock() }
	}
	defer func() {
		for _, s := range sups {
			s.close(b)
		}
	}()
	reqs := func() (r, c, cf uint64) {
		for _, st := range stores {
			s := st.Stats()
			r, c, cf = r+s.Reads, c+s.Commits, cf+s.Conflicts
		}
		return
	}
	const perRound = 100
	r0, c0, cf0 := reqs()
	cpu0 := cpuTimes()
	b.ResetTimer()
	// Two per slot in flight: one running, one queued.
	lat := loadbench.Rounds(b, perRound, 4*hosts, func(r, i int) (time.Duration, bool) {
		s := sups[i%hosts]
		t0 := time.Now()
		id := s.submit(b, spec(b, fmt.Sprintf("c%d-%d", r, i), protocol.OpExecute, add2, []uint64{uint64(i), 1}, protocol.Limits{Reductions: 100}, nil))
		st, err := s.WaitEnd(context.Background(), id)
		if err != nil || st.Job.State != lifecycle.Accepted {
			b.Errorf("%s: %v %+v", id, err, st)
			return 0, false
		}
		return time.Since(t0), true
	})
	b.StopTimer()
	cpu := cpuTimes().sub(cpu0)
	r1, c1, cf1 := reqs()
	jobs := float64(perRound * b.N)
	b.ReportMetric(jobs/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(cpu.self.Seconds()*1000/jobs, "proc-cpu-ms/job")
	b.ReportMetric(cpu.children.Seconds()*1000/jobs, "worker-cpu-ms/job")
	if srv != nil {
		b.ReportMetric(float64(c1-c0)/jobs, "etcd-commits/job")
		b.ReportMetric(float64(r1-r0)/jobs, "etcd-reads/job")
		b.ReportMetric(float64(cf1-cf0)/jobs, "etcd-conflicts/job")
	}
	loadbench.ReportLatency(b, lat, 0.5, 0.99)
	mu.Lock()
	b.ReportMetric(loadbench.Millis(loadbench.Percentile(takes, 0.5)), "take-p50-ms")
	b.ReportMetric(loadbench.Millis(loadbench.Percentile(takes, 0.99)), "take-p99-ms")
	mu.Unlock()
}
