package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// The dashboard's routes over the socket: the overview, the paged list
// (its filters, its cursor, a damaged cursor answered invalid_cursor),
// the older list form unchanged without the new parameters, and lookup
// by prefix (ambiguous_job, unknown_job).
func TestDashboardRoutes(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	for _, id := range []string{"dash-a1", "dash-a2", "dash-b"} {
		if _, err := ts.client.Submit(ctx, spec(t, id, 1, 2), 0, nil); err != nil {
			t.Fatal(err)
		}
		if st, err := ts.client.WaitEnd(ctx, id); err != nil || st.Job.State != lifecycle.Accepted {
			t.Fatalf("%s: %+v %v", id, st, err)
		}
	}
	o, err := ts.client.Overview(ctx)
	if err != nil || o.TotalJobs != 3 || len(o.Jobs) != len(lifecycle.States) || len(o.LastHour.Accepted) != 60 || o.Slots != 1 || o.Store != "bbolt" {
		t.Fatalf("overview: %+v %v", o, err)
	}
	var accepted uint64
	for _, c := range o.LastHour.Accepted {
		accepted += c
	}
	if accepted != 3 || o.Latency.Admission.Samples != 3 || o.Host == "" || o.Version == "" {
		t.Errorf("overview: %d accepted in the hour, %+v", accepted, o)
	}

	// Two pages of two and one, newest first.
	p, err := ts.client.ListJobs(ctx, apitypes.JobQuery{Limit: 2})
	if err != nil || len(p.Jobs) != 2 || p.Jobs[0].JobID != "dash-b" || p.Next == "" {
		t.Fatalf("first page: %+v %v", p, err)
	}
	if j := p.Jobs[0]; j.State != lifecycle.Accepted || j.Operation != "execute" || len(j.Program) != 64 || j.Ended.IsZero() || j.Attempts != 1 {
		t.Errorf("summary: %+v", j)
	}
	p2, err := ts.client.ListJobs(ctx, apitypes.JobQuery{Limit: 2, Cursor: p.Next})
	if err != nil || len(p2.Jobs) != 1 || p2.Jobs[0].JobID != "dash-a1" || p2.Next != "" {
		t.Fatalf("second page: %+v %v", p2, err)
	}
	if p, err := ts.client.ListJobs(ctx, apitypes.JobQuery{State: lifecycle.Failed}); err != nil || len(p.Jobs) != 0 || p.Next != "" {
		t.Errorf("failed jobs: %+v %v", p, err)
	}
	if p, err := ts.client.ListJobs(ctx, apitypes.JobQuery{Program: p.Jobs[0].Program}); err != nil || len(p.Jobs) != 3 {
		t.Errorf("by program: %+v %v", p, err)
	}

	for _, c := range []struct {
		target string
		status int
		code   protocol.Code
	}{
		{"/v1/jobs?cursor=" + p.Next[:len(p.Next)-2], http.StatusBadRequest, protocol.CodeInvalidCursor},
		{"/v1/jobs?cursor=%21%21", http.StatusBadRequest, protocol.CodeInvalidCursor},
		{"/v1/jobs?state=failed&cursor=" + p.Next, http.StatusBadRequest, protocol.CodeInvalidCursor},
		{"/v1/jobs?code=nonsense", http.StatusBadRequest, protocol.CodeInvalidJob},
		{"/v1/jobs?op=run", http.StatusBadRequest, protocol.CodeInvalidJob},
		{"/v1/jobs?program=XY", http.StatusBadRequest, protocol.CodeInvalidJob},
		{"/v1/jobs?since=yesterday", http.StatusBadRequest, protocol.CodeInvalidJob},
		{"/v1/jobs?cursor=&limit=1001", http.StatusBadRequest, protocol.CodeInvalidJob},
		{"/v1/jobs?cursor=&after=x", http.StatusBadRequest, protocol.CodeInvalidJob},
		{"/v1/lookup/dash-a", http.StatusConflict, protocol.CodeAmbiguousJob},
		{"/v1/lookup/nope", http.StatusNotFound, protocol.CodeUnknownJob},
		{"/v1/overview?x=1", http.StatusBadRequest, protocol.CodeInvalidJob},
	} {
		resp, body := ts.request(t, http.MethodGet, c.target, nil)
		if e := apiError(t, body); resp.StatusCode != c.status || e.Code != c.code {
			t.Errorf("%s: %d %s (%s), want %d %s", c.target, resp.StatusCode, e.Code, e.Message, c.status, c.code)
		}
	}
	if id, err := ts.client.FindJob(ctx, "dash-b"); err != nil || id != "dash-b" {
		t.Errorf("lookup dash-b: %q %v", id, err)
	}
	if id, err := ts.client.FindJob(ctx, "dash-a2"); err != nil || id != "dash-a2" {
		t.Errorf("lookup dash-a2: %q %v", id, err)
	}

	// Without the new parameters, the list is what it was: an array.
	resp, body := ts.request(t, http.MethodGet, "/v1/jobs?state=accepted&limit=2", nil)
	var jobs []apitypes.Job
	if err := json.Unmarshal(body, &jobs); err != nil || resp.StatusCode != http.StatusOK || len(jobs) != 2 || resp.Header.Get(NextPageHeader) == "" {
		t.Errorf("the older list: %d %s %v", resp.StatusCode, body, err)
	}
}
