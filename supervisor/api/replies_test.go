package api

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// TestRepliesAreAPITypes: each reply of the job side is exactly its
// apitypes type (decoded strictly: no key of a store record's own, every
// integer a decimal string), and the names are the API's (job_id, never
// id or job for a job's id).
func TestRepliesAreAPITypes(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	if _, err := ts.client.Submit(ctx, spec(t, "rt", 1, 2), 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.client.WaitEnd(ctx, "rt"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, target string
		into           any
	}{
		{"POST", "/v1/jobs", &apitypes.SubmitReply{}},
		{"GET", "/v1/jobs/rt", &apitypes.JobStatus{}},
		{"GET", "/v1/jobs/rt/wait", &apitypes.JobStatus{}},
		{"GET", "/v1/jobs", &[]apitypes.Job{}},
		{"GET", "/v1/jobs?last=1", &[]apitypes.Job{}},
		{"GET", "/v1/jobs/rt/events", &[]apitypes.Event{}},
		{"POST", "/v1/jobs/rt/cancel", &apitypes.CancelReply{}},
		{"GET", "/v1/hosts", &apitypes.HostsReply{}},
		{"GET", "/v1/capabilities", &apitypes.CapabilitiesReply{}},
		{"GET", "/v1/store/check", &apitypes.CheckReport{}},
		{"GET", "/v1/drain", &apitypes.DrainStatus{}},
		{"POST", "/v1/gc", &apitypes.GCReport{}},
		{"GET", "/v1/jobs/nope", &apitypes.ErrorReply{}},
	} {
		var body []byte
		if c.target == "/v1/jobs" && c.method == "POST" {
			body, _ = json.Marshal(apitypes.SubmitRequest{Spec: spec(t, "rt", 1, 2)})
		}
		_, raw := ts.request(t, c.method, c.target, body)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(c.into); err != nil {
			t.Errorf("%s %s: not its API type (%T): %v\n%s", c.method, c.target, c.into, err, raw)
			continue
		}
		again, err := json.Marshal(c.into)
		if err != nil {
			t.Fatal(err)
		}
		if s := string(again); strings.Contains(s, `"id":`) || strings.Contains(s, `"job":"`) {
			t.Errorf("%s %s: a job's id not named job_id: %s", c.method, c.target, s)
		}
	}
}
