package supervisor

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// BenchmarkTrivialJobs runs trivial isolated execute jobs through an
// in-process supervisor with 2 slots (the daemon benchmark without the
// socket): jobs/s and p50/p99 from admission to acceptance.
func BenchmarkTrivialJobs(b *testing.B) {
	requireIsolation(b)
	s := open(b, b.TempDir(), IsolationRequired, func(c *Config) { c.Slots = 2 })
	defer s.close(b)
	const perRound = 100
	var lat []time.Duration
	var mu sync.Mutex
	b.ResetTimer()
	for r := 0; r < b.N; r++ {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4)
		for i := range perRound {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				t0 := time.Now()
				id := s.submit(b, spec(b, fmt.Sprintf("t%d-%d", r, i), protocol.OpExecute, add2, []uint64{uint64(i), 1}, protocol.Limits{Reductions: 100}, nil))
				st := s.wait(b, id)
				if st.Job.State != lifecycle.Accepted {
					b.Errorf("%s: %s", id, st.Job.State)
				}
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(perRound*b.N)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkStoreTransaction is one durable state change (bbolt commit with
// fsync) on this disk.
func BenchmarkStoreTransaction(b *testing.B) {
	requireIsolation(b)
	s := open(b, b.TempDir(), IsolationRequired, nil)
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
