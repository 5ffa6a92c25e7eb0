package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

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
	var lat []time.Duration
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		sem := make(chan struct{}, 4) // two per slot: one running, one queued
		for i := range perRound {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				id := fmt.Sprintf("bench-%d-%d", round, i)
				spec := jobSpec(b, id, protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{uint64(i), 1}, protocol.Limits{Reductions: 100})
				t0 := time.Now()
				if _, err := d.client.Submit(ctx, spec, 0, nil); err != nil {
					b.Error(err)
					return
				}
				st, err := d.client.WaitEnd(ctx, id)
				if err != nil {
					b.Error(err)
					return
				}
				if st.Job.State != "accepted" {
					b.Errorf("%s: %s %+v", id, st.Job.State, st.Job.Error)
				}
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	el := b.Elapsed()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(perRound*b.N)/el.Seconds(), "jobs/s")
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
