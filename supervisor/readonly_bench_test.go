package supervisor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/internal/race"
)

// BenchmarkReadOnlyReads times the reads of a home no daemon owns as the
// CLI and the dashboard make them (supervisor.OpenReadOnly, one open per
// request: its lock, its page check, the engine's key; then the read;
// then Close) side by side with the same reads of a daemon that holds
// the store open, on one store of each size (fillStore's jobs): a job's
// status, the first page of the job list, and the overview (which a
// read-only supervisor counts with a scan: it keeps no figures). Sizes
// as BenchmarkDashboardReads (1,000 and 100,000; 200 and 1,000 under
// -short or the race detector).
func BenchmarkReadOnlyReads(b *testing.B) {
	sizes := []int{1000, 100000}
	if testing.Short() || race.Enabled {
		sizes = []int{200, 1000}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			home := b.TempDir()
			fillStore(b, home, n)
			ctx := context.Background()
			reads := func(s *Supervisor, id string) []struct {
				name string
				read func() error
			} {
				return []struct {
					name string
					read func() error
				}{
					{"status", func() error { _, err := s.Status(ctx, id); return err }},
					{"first-page", func() error { _, err := s.ListJobs(ctx, JobQuery{}); return err }},
					{"overview", func() error { _, err := s.Overview(ctx); return err }},
				}
			}
			// The daemon's reads, the store open.
			d, _ := openStub(b, home, func(c *Config) { c.QueueLimit = n })
			p, err := d.ListJobs(ctx, JobQuery{Limit: 1})
			if err != nil || len(p.Jobs) == 0 {
				b.Fatalf("no job to read: %v", err)
			}
			id := p.Jobs[0].ID
			for _, r := range reads(d, id) {
				b.Run("daemon/"+r.name, func(b *testing.B) { timeReads(b, r.read) })
			}
			d.Close(ctx)
			// Each read opens the store read-only, reads, closes it.
			for i, r := range reads(nil, id) {
				b.Run("read-only/"+r.name, func(b *testing.B) {
					timeReads(b, func() error {
						s, err := OpenReadOnly(ctx, ReadOnlyConfig{Home: home})
						if err != nil {
							return err
						}
						defer s.Close(ctx)
						return reads(s, id)[i].read()
					})
				})
			}
		})
	}
}

// timeReads runs read b.N times and reports its p50 and p95.
func timeReads(b *testing.B, read func() error) {
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := read(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	loadbench.ReportLatency(b, lat, 0.5, 0.95)
}
