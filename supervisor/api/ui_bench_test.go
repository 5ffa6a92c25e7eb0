package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// BenchmarkDashboardPages: each page of the dashboard side by side with
// the JSON route it reads, on a real supervisor with a few jobs: what
// rendering the page adds to the read (the store-size figures are
// BenchmarkDashboardReads', in supervisor).
func BenchmarkDashboardPages(b *testing.B) {
	ts := startServer(b, Config{})
	ctx := context.Background()
	const jobs = 20
	for i := 0; i < jobs; i++ {
		if _, err := ts.client.Submit(ctx, spec(b, fmt.Sprintf("b-%02d", i), 3, uint64(i)), 0, nil); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < jobs; i++ {
		if _, err := ts.client.WaitEnd(ctx, fmt.Sprintf("b-%02d", i)); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct{ name, target string }{
		{"overview/json", "/v1/overview"}, {"overview/html", "/ui/"},
		{"jobs/json", "/v1/jobs?cursor=&limit=50"}, {"jobs/html", "/ui/jobs"},
		{"job/json", "/v1/jobs/b-07"}, {"job/html", "/ui/jobs/b-07"},
		{"hosts/json", "/v1/hosts"}, {"hosts/html", "/ui/hosts"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if resp, _ := ts.page(b, "GET", c.target); resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: %s", c.target, resp.Status)
				}
			}
		})
	}
}
