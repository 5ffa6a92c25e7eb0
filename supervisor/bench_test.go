package supervisor

import (
	"context"
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// BenchmarkTrivialJobs runs trivial isolated execute jobs through an
// in-process supervisor with 2 slots (the daemon benchmark without the
// socket): jobs/s and p50/p99 from admission to acceptance.
func BenchmarkTrivialJobs(b *testing.B) {
	requireIsolation(b)
	// The daemon's GC setting (cmd/cyber-supervisor: daemonGCPercent).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	s := open(b, b.TempDir(), launch.IsolationRequired, func(c *Config) { c.Slots = 2 })
	defer s.close(b)
	const perRound = 100
	cpu0 := cpuTimes()
	b.ResetTimer()
	lat := loadbench.Rounds(b, perRound, 4, func(r, i int) (time.Duration, bool) {
		t0 := time.Now()
		id := s.submit(b, spec(b, fmt.Sprintf("t%d-%d", r, i), protocol.OpExecute, add2, []uint64{uint64(i), 1}, protocol.Limits{Reductions: 100}, nil))
		st := s.wait(b, id)
		if st.Job.State != lifecycle.Accepted {
			b.Errorf("%s: %s", id, st.Job.State)
		}
		return time.Since(t0), true
	})
	b.StopTimer()
	cpu := cpuTimes().sub(cpu0)
	jobs := float64(perRound * b.N)
	b.ReportMetric(jobs/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(cpu.self.Seconds()*1000/jobs, "sup-cpu-ms/job")
	b.ReportMetric(cpu.children.Seconds()*1000/jobs, "worker-cpu-ms/job")
	loadbench.ReportLatency(b, lat, 0.5, 0.99)
}

// BenchmarkStoreTransaction is one durable state change (bbolt commit with
// fsync) on this disk.
func BenchmarkStoreTransaction(b *testing.B) {
	requireIsolation(b)
	s := open(b, b.TempDir(), launch.IsolationRequired, nil)
	defer s.close(b)
	ctx := context.Background()
	for b.Loop() {
		s.store.Update(ctx, func(tx store.Tx) error {
			m, err := tx.Meta()
			if err != nil {
				return err
			}
			m.NextSeq++
			return tx.PutMeta(m)
		})
	}
}

// BenchmarkAdmittedToRunning measures, with a warm worker ready, the time
// from admission (the "submitted" event) to the attempt running (the
// "worker launched" event): prepare, bind the warm worker (limits, work
// dir), record running. One job at a time, each once the pool is full.
func BenchmarkAdmittedToRunning(b *testing.B) {
	requireIsolation(b)
	s := open(b, b.TempDir(), launch.IsolationRequired, func(c *Config) { c.Slots = 1 })
	defer s.close(b)
	l := s.cfg.Launcher.(*launch.ProcessLauncher)
	ctx := context.Background()
	var lat []time.Duration
	warmReady := func() {
		if err := l.WaitWarm(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		warmReady()
		b.StartTimer()
		id := s.submit(b, spec(b, fmt.Sprintf("r%d", i), protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{Reductions: 100, MemoryBytes: 64 << 20}, nil))
		st := s.wait(b, id)
		if st.Job.State != lifecycle.Accepted {
			b.Fatalf("%s: %s", id, st.Job.State)
		}
		ev, _ := s.Events(ctx, id)
		var sub, run time.Time
		for _, e := range ev {
			switch e.Reason {
			case "submitted":
				sub = e.Time
			case "worker launched":
				run = e.Time
			}
		}
		lat = append(lat, run.Sub(sub))
	}
	loadbench.ReportLatency(b, lat, 0.5, 0.95, 0.99)
}

// BenchmarkAttemptIsolation: the same trivial job, one at a time, through
// a supervisor whose workers are isolated (cgroups, namespaces, jail,
// seccomp, Landlock; no warm pool) and through one that launches them
// plainly, interleaved so both see the same load. The time is submit to
// accepted: admission, launch, handshake, the job, verification and
// acceptance (teardown runs after the result, off this path).
func BenchmarkAttemptIsolation(b *testing.B) {
	requireIsolation(b)
	noPool := func(c *launch.Config) { c.PoolSize = 0 }
	iso := openLaunched(b, b.TempDir(), launch.IsolationRequired, noPool, func(c *Config) { c.Slots = 1 }, nil)
	defer iso.close(b)
	plain := openLaunched(b, b.TempDir(), launch.IsolationOff, noPool, func(c *Config) { c.Slots = 1 }, nil)
	defer plain.close(b)
	run := func(s *testSup, id string) time.Duration {
		t0 := time.Now()
		jid := s.submit(b, spec(b, id, protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{Reductions: 100}, nil))
		if st := s.wait(b, jid); st.Job.State != lifecycle.Accepted {
			b.Fatalf("%s: %s %+v", jid, st.Job.State, st.Job.Error)
		}
		return time.Since(t0)
	}
	for i := range 3 {
		run(iso, fmt.Sprintf("warm-i%d", i))
		run(plain, fmt.Sprintf("warm-p%d", i))
	}
	var li, lp []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		li = append(li, run(iso, fmt.Sprintf("i%d", i)))
		lp = append(lp, run(plain, fmt.Sprintf("p%d", i)))
	}
	b.StopTimer()
	pct := func(l []time.Duration, p float64) float64 { return loadbench.Millis(loadbench.Percentile(l, p)) }
	for _, q := range []struct {
		name string
		p    float64
	}{{"p50", 0.5}, {"p95", 0.95}, {"p99", 0.99}} {
		b.ReportMetric(pct(li, q.p), "iso-"+q.name+"-ms")
		b.ReportMetric(pct(lp, q.p), "plain-"+q.name+"-ms")
		b.ReportMetric(pct(li, q.p)/pct(lp, q.p), "ratio-"+q.name)
	}
}
