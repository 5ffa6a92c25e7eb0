package supervisor

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/internal/race"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// BenchmarkDashboardReads times the dashboard's reads on a real bbolt
// store of each size side by side (issue 31: p95 ≤ 50 ms at 100,000
// jobs): the overview, the first page of the job list, a page of a
// filter that matches one job in fifteen, a page of one that matches
// none (the page's scan budget is its whole cost) and a page deep in the
// list (a cursor's seek). It also reports how long the daemon's start
// took on the store (open-ms: its check and its one scan for the
// figures), and, as the baseline the overview's kept counts replace, a
// count of the jobs by state with a scan (count-by-scan: what
// /metrics did per scrape before). Sizes: DASHBOARD_JOBS (comma-separated; default 1000 and
// 100000, and 200 and 1000 under -short or the race detector, the CI
// smoke run). scripts/bench.sh runs it.
func BenchmarkDashboardReads(b *testing.B) {
	for _, n := range dashboardSizes(b) {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			home := b.TempDir()
			t0 := time.Now()
			fillStore(b, home, n)
			filled := time.Since(t0)
			t0 = time.Now()
			s, _ := openStub(b, home, func(c *Config) { c.QueueLimit = n })
			opened := time.Since(t0)
			ctx := context.Background()
			// The cursor of the page that begins half-way down the list.
			var middle string
			for seen := 0; seen < n/2; {
				p, err := s.ListJobs(ctx, JobQuery{Limit: min(MaxPageLimit, n/2-seen), Cursor: middle})
				if err != nil {
					b.Fatal(err)
				}
				seen, middle = seen+len(p.Jobs), p.Next
			}
			page := func(q JobQuery, want int) func() error {
				return func() error {
					p, err := s.ListJobs(ctx, q)
					if err == nil && len(p.Jobs) != want {
						err = fmt.Errorf("%d jobs, want %d", len(p.Jobs), want)
					}
					return err
				}
			}
			for _, r := range []struct {
				name string
				read func() error
			}{
				{"overview", func() error {
					o, err := s.Overview(ctx)
					if err == nil && o.Jobs[lifecycle.Accepted] == 0 {
						err = fmt.Errorf("no accepted jobs counted: %v", o.Jobs)
					}
					return err
				}},
				// The baseline: counting by state with a scan per request,
				// as /metrics did before the counts were kept.
				{"count-by-scan", func() error {
					_, err := s.figuresByScan(ctx)
					return err
				}},
				{"first-page", page(JobQuery{}, DefaultPageLimit)},
				{"filtered-page", page(JobQuery{State: lifecycle.Failed, Code: protocol.CodeMemoryExhausted, Limit: 25}, min(25, failedOOM(n)))},
				{"no-match-page", page(JobQuery{Code: protocol.CodeProofRejected}, 0)},
				{"deep-page", page(JobQuery{Cursor: middle}, DefaultPageLimit)},
			} {
				b.Run(r.name, func(b *testing.B) {
					var lat []time.Duration
					cpu0 := cpuTimes()
					for b.Loop() {
						t0 := time.Now()
						if err := r.read(); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(t0))
					}
					// The process's CPU per read as well: on a shared
					// machine the wall-clock percentiles are mostly its
					// neighbours' load.
					b.ReportMetric(cpuTimes().sub(cpu0).self.Seconds()*1000/float64(len(lat)), "cpu-ms/op")
					loadbench.ReportLatency(b, lat, 0.5, 0.95)
					b.ReportMetric(loadbench.Millis(filled), "fill-ms")
					b.ReportMetric(loadbench.Millis(opened), "open-ms")
				})
			}
		})
	}
}

// dashboardSizes are the store sizes the dashboard's benchmarks run at:
// DASHBOARD_JOBS (comma-separated), else 1000 and 100000, and 200 and
// 1000 under -short or the race detector (the CI smoke run).
func dashboardSizes(b *testing.B) []int {
	sizes := []int{1000, 100000}
	if testing.Short() || race.Enabled {
		sizes = []int{200, 1000}
	}
	if v := os.Getenv("DASHBOARD_JOBS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 100 {
				b.Fatalf("DASHBOARD_JOBS=%q: want sizes of at least 100", v)
			}
			sizes = append(sizes, n)
		}
	}
	return sizes
}

// fillStore writes n jobs into home's store through the store's own API,
// in batches: 70 % accepted (each through its attempt's whole
// lifecycle), 20 % failed with one of three codes, 5 % cancelled, 5 %
// queued; two operations, seven programs, submitted a second apart over
// the last n seconds.
func fillStore(b *testing.B, home string, n int) {
	b.Helper()
	st, err := bolt.OpenWith(storeDir(home), bolt.Options{LockWait: time.Second, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	codes := []protocol.Code{protocol.CodeMemoryExhausted, protocol.CodeDeadlineExceeded, protocol.CodeExecutionFailed}
	start := time.Now().UTC().Add(-time.Duration(n) * time.Second)
	const batch = 2000
	for lo := 0; lo < n; lo += batch {
		err := st.Update(context.Background(), func(tx store.Tx) error {
			for i := lo; i < min(lo+batch, n); i++ {
				if err := fillJob(tx, i, start.Add(time.Duration(i)*time.Second), codes); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func fillJob(tx store.Tx, i int, created time.Time, codes []protocol.Code) error {
	id := fmt.Sprintf("job-%07d", i)
	spec := []byte(`{"job_id":"` + id + `","filler":"` + strings.Repeat("x", 200) + `"}`)
	seq, err := tx.NextSeq()
	if err != nil {
		return err
	}
	ops := []string{"execute", "prove"}
	j := &store.Job{ID: id, SpecDigest: store.SpecDigest(spec), Operation: ops[i%2], Program: fmt.Sprintf("%064x", i%7),
		Seq: seq, State: lifecycle.Queued, Created: created, Updated: created, Retry: store.RetryPolicy{MaxAttempts: 1}}
	ended := created.Add(time.Second)
	switch k := i % 100; {
	case k < 70:
		j.Attempts = 1
		if err := tx.CreateJob(j, spec); err != nil {
			return err
		}
		a := &store.Attempt{Job: id, N: 1, Boot: "fill", Created: created, State: lifecycle.Queued}
		for _, st := range []lifecycle.State{lifecycle.Queued, lifecycle.Running, lifecycle.Produced, lifecycle.Verified, lifecycle.Accepted} {
			a.State = st
			switch st {
			case lifecycle.Running:
				a.Started = created
			case lifecycle.Produced:
				a.Produced = []byte(`{"output":["8"]}`)
			case lifecycle.Verified:
				a.Verified = []byte(`{"verifier":"execution"}`)
			case lifecycle.Accepted:
				a.Ended = ended
			}
			if err := tx.PutAttempt(a); err != nil {
				return err
			}
		}
		j.State, j.Accepted, j.Updated, j.Result = lifecycle.Accepted, 1, ended, []byte(`{"output":["8"]}`)
		return tx.PutJob(j)
	case k < 90:
		j.State, j.Updated, j.Error = lifecycle.Failed, ended, protocol.Errorf(codes[i%len(codes)], "filled")
	case k < 95:
		j.State, j.Updated, j.Error = lifecycle.Cancelled, ended, protocol.Errorf(protocol.CodeCancelled, "filled")
	default:
		if err := tx.CreateJob(j, spec); err != nil {
			return err
		}
		return tx.Enqueue(id, 0, seq)
	}
	return tx.CreateJob(j, spec)
}

// failedOOM is how many of fillStore's n jobs failed with
// memory_exhausted (one in fifteen).
func failedOOM(n int) int {
	c := 0
	for i := range n {
		if k := i % 100; k >= 70 && k < 90 && i%3 == 0 {
			c++
		}
	}
	return c
}
