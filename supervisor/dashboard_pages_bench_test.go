package supervisor_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
)

// BenchmarkDashboardPagesAtScale times the dashboard's pages themselves
// (HTML, rendered by the API's own handler in process, as the daemon
// serves them on its socket) on the store BenchmarkDashboardReads
// fills, at each size side by side (issue 31: the overview and the jobs
// list in ≤ 50 ms p95 at 100,000 jobs): the overview, the jobs list's
// first page, a filtered page, a page deep in the list and one job.
// Sizes as BenchmarkDashboardReads (DASHBOARD_JOBS).
func BenchmarkDashboardPagesAtScale(b *testing.B) {
	for _, n := range supervisor.DashboardSizesForBench(b) {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			home := b.TempDir()
			supervisor.FillStoreForBench(b, home, n)
			s := supervisor.OpenForBench(b, home, n)
			h, err := api.NewInProcess(s, nil, api.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			get := func(target string) *httptest.ResponseRecorder {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://supervisor"+target, nil))
				return w
			}
			// A job the store holds (fillStore names them job-%07d).
			id := fmt.Sprintf("job-%07d", n/2)
			for _, c := range []struct{ name, target, want string }{
				{"overview", "/ui/", "Overview"},
				{"jobs", "/ui/jobs", "jobs"},
				{"jobs-filtered", "/ui/jobs?state=failed&code=memory_exhausted", "memory_exhausted"},
				{"job", "/ui/jobs/" + id, id},
			} {
				b.Run(c.name, func(b *testing.B) {
					var lat []time.Duration
					for b.Loop() {
						t0 := time.Now()
						w := get(c.target)
						lat = append(lat, time.Since(t0))
						if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), c.want) {
							b.Fatalf("%s: %d, %.300s", c.target, w.Code, w.Body.String())
						}
					}
					loadbench.ReportLatency(b, lat, 0.5, 0.95)
				})
			}
		})
	}
}
