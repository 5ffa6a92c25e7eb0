package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// BenchmarkDaemonTrivialJobs: trivial isolated jobs (execute, add two
// inputs) end to end through a daemon with 2 slots: submit over the
// socket, launch, limits, jail, handshake, run, verify, accept, teardown.
// Reports jobs/s and the p50/p99 latency from admission to acceptance.
// Clients wait with ?until=end, one answer per job, as a client that only
// wants outcomes does.
func BenchmarkDaemonTrivialJobs(b *testing.B) {
	requireIsolation(b)
	home := filepath.Join(b.TempDir(), "home")
	os.MkdirAll(home, 0o700)
	d := startDaemon(b, home, 2)
	defer d.stop(b)
	ctx := context.Background()
	const perRound = 200
	b.ResetTimer()
	// Two per slot in flight: one running, one queued.
	lat := loadbench.Rounds(b, perRound, 4, func(round, i int) (time.Duration, bool) {
		id := fmt.Sprintf("bench-%d-%d", round, i)
		spec := jobSpec(b, id, protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{uint64(i), 1}, protocol.Limits{Reductions: 100})
		t0 := time.Now()
		if _, err := d.client.Submit(ctx, spec, 0, nil); err != nil {
			b.Error(err)
			return 0, false
		}
		st, err := d.client.WaitEnd(ctx, id)
		if err != nil {
			b.Error(err)
			return 0, false
		}
		if st.Job.State != "accepted" {
			b.Errorf("%s: %s %+v", id, st.Job.State, st.Job.Error)
		}
		return time.Since(t0), true
	})
	b.ReportMetric(float64(perRound*b.N)/b.Elapsed().Seconds(), "jobs/s")
	loadbench.ReportLatency(b, lat, 0.5, 0.99)
}
