package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// The routes of the CLI's list --limit, events --follow and gc: read as
// strictly as the others, and doing what they say.
func TestCLIRoutes(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	for _, id := range []string{"zz", "aa", "mm"} {
		if _, err := ts.client.Submit(ctx, spec(t, id, 1, 2), 0, nil); err != nil {
			t.Fatal(err)
		}
		st, err := ts.client.WaitEnd(ctx, id)
		if err != nil || st.Job.State != "accepted" {
			t.Fatalf("%s: %+v %v", id, st, err)
		}
	}
	// last=N: the newest N, oldest first, whatever the ids.
	jobs, err := ts.client.ListLast(ctx, "", 2)
	if err != nil || len(jobs) != 2 || jobs[0].JobID != "aa" || jobs[1].JobID != "mm" {
		t.Fatalf("last=2: %v %v", ids(jobs), err)
	}
	// events after a seq, and a wait that ends with the job.
	ev, err := ts.client.Events(ctx, "mm")
	if err != nil || len(ev) < 3 {
		t.Fatalf("events: %v %v", ev, err)
	}
	later, err := ts.client.EventsAfter(ctx, "mm", ev[1].Seq, false)
	if err != nil || len(later) != len(ev)-2 || later[0].Seq != ev[2].Seq {
		t.Fatalf("after %d: %v %v", ev[1].Seq, later, err)
	}
	start := time.Now()
	none, err := ts.client.EventsAfter(ctx, "mm", ev[len(ev)-1].Seq, true)
	if err != nil || len(none) != 0 || time.Since(start) > 20*time.Second {
		t.Fatalf("a wait on an ended job: %v %v after %s", none, err, time.Since(start))
	}
	// gc: what it removed, by state.
	rep, err := ts.client.GC(ctx, 0, "failed")
	if err != nil || len(rep.Removed) != 0 {
		t.Fatalf("gc failed: %+v %v", rep, err)
	}
	// An attempt whose goroutine has not let go of its job yet keeps the
	// job a moment longer: gc again until all three are gone.
	removed := 0
	waitFor(t, "gc to remove the three jobs", func() bool {
		rep, err := ts.client.GC(ctx, 0, "")
		if err != nil {
			t.Fatal(err)
		}
		removed += len(rep.Removed)
		return removed == 3
	})
	if n := jobCount(t, ts); n != 0 {
		t.Fatalf("%d jobs after gc", n)
	}
	for _, c := range []struct{ method, target, want string }{
		{"GET", "/v1/jobs?last=0", "last"},
		{"GET", "/v1/jobs?last=3&after=aa", "excludes"},
		{"GET", "/v1/jobs?last=99999999", "last"},
		{"GET", "/v1/jobs/mm/events?after=x", "after"},
		{"GET", "/v1/jobs/mm/events?wait=2", "wait"},
		{"GET", "/v1/jobs/mm/events?after=1&after=2", "given 2 times"},
		{"POST", "/v1/gc?state=unknown", "state"},
		{"POST", "/v1/gc?older_than=-1h", "older_than"},
		{"POST", "/v1/gc?now=1", "unknown query parameter"},
	} {
		resp, rb := ts.request(t, c.method, c.target, nil)
		e := apiError(t, rb)
		if resp.StatusCode != 400 || !strings.Contains(e.Error(), c.want) {
			t.Errorf("%s %s: %d %s, want 400 with %q", c.method, c.target, resp.StatusCode, rb, c.want)
		}
	}
	resp, rb := ts.request(t, "GET", "/v1/gc", nil)
	if resp.StatusCode != 405 {
		t.Errorf("GET /v1/gc: %d %s", resp.StatusCode, rb)
	}
	var caps apitypes.CapabilitiesReply
	_, rb = ts.request(t, "GET", "/v1/capabilities", nil)
	if err := json.Unmarshal(rb, &caps); err != nil || caps.Limits.DefaultWallTimeMS != uint64(supervisor.DefaultWallTime.Milliseconds()) || caps.Limits.MinMemoryBytes != supervisor.MinWorkerMemory {
		t.Errorf("capabilities' limits: %+v %v", caps.Limits, err)
	}
}

func ids(jobs []apitypes.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.JobID)
	}
	return out
}
