package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// The submission envelope refuses duplicate keys at every depth, and a
// refused submission stores nothing.
func TestSubmissionDuplicatesRefused(t *testing.T) {
	ts := startServer(t, Config{})
	a, b := string(spec(t, "dupa", 1, 2)), string(spec(t, "dupb", 3, 4))
	cases := map[string]string{
		`{"spec":` + a + `,"spec":` + b + `}`:                                                                   "$.spec: duplicate key",
		`{"spec":` + a + `,"priority":1,"priority":2}`:                                                          "$.priority: duplicate key",
		`{"spec":` + a + `,"retry":{"max_attempts":2,"max_attempts":3}}`:                                        "$.retry.max_attempts: duplicate key",
		`{"spec":` + strings.Replace(a, `"job_id":"dupa"`, `"job_id":"dupa","job_id":"dupc"`, 1) + `}`:          "$.job_id: duplicate key",
		`{"spec":` + strings.Replace(a, `"reductions":"1000"`, `"reductions":"1000","reductions":"9"`, 1) + `}`: "$.limits.reductions: duplicate key",
		`{"spec":` + a + `,"surprise":true}`:                                                                    "$.surprise: unknown key",
		`{"spec":` + a + `,"priority":1.5}`:                                                                     "$.priority: not an integer",
	}
	for body, want := range cases {
		resp, rb := ts.request(t, http.MethodPost, "/v1/jobs", []byte(body))
		e := apiError(t, rb)
		if resp.StatusCode != http.StatusBadRequest || e.Code != protocol.CodeInvalidJob || !strings.Contains(e.Message, want) {
			t.Errorf("%.60s…: %d %+v, want invalid_job %q", body, resp.StatusCode, e, want)
		}
	}
	if n := jobCount(t, ts); n != 0 {
		t.Fatalf("refused submissions stored %d jobs", n)
	}
	// The same envelope without the duplicate is admitted.
	resp, rb := ts.request(t, http.MethodPost, "/v1/jobs", []byte(`{"spec":`+a+`,"priority":2}`))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("%d %s", resp.StatusCode, rb)
	}
	jobs, err := ts.client.List(context.Background(), "")
	if err != nil || len(jobs) != 1 || jobs[0].JobID != "dupa" || jobs[0].Priority != 2 {
		t.Fatalf("%v %+v", err, jobs)
	}
}

// No answer echoes more than a short escaped prefix of what the client
// sent, and no message exceeds the contract's bound.
func TestMessagesAreBounded(t *testing.T) {
	ts := startServer(t, Config{})
	long := strings.Repeat("x", 100_000)
	hostile := strings.Repeat("\"<\x01é", 3000)
	esc := func(s string) string {
		return strings.NewReplacer("%", "%25", "\"", "%22", "<", "%3C", "\x01", "%01", "é", "%C3%A9", " ", "%20").Replace(s)
	}
	targets := []struct{ method, target string }{
		{"GET", "/v1/jobs/" + long},
		{"GET", "/v1/jobs/" + esc(hostile)},
		{"GET", "/v1/jobs/" + long + "/result"},
		{"GET", "/v1/jobs/" + long + "/events"},
		{"GET", "/v1/jobs/" + long + "/wait?until=end"},
		{"POST", "/v1/jobs/" + long + "/cancel"},
		{"POST", "/v1/jobs/x/cancel?reason=" + long},
		{"GET", "/v1/jobs?state=" + long},
		{"GET", "/v1/jobs?state=" + esc(hostile)},
		{"GET", "/v1/jobs?after=" + long},
		{"GET", "/v1/jobs?limit=" + long},
		{"GET", "/v1/jobs?" + long + "=1"},
		{"GET", "/v1/jobs/x/wait?until=" + long},
		{"GET", "/v1/jobs/x/wait?seen=" + long},
		{"GET", "/" + long},
		{"DELETE", "/v1/jobs/" + long},
		{long[:5000], "/v1/jobs"},
	}
	for _, tc := range targets {
		// Most of these exceed the header bound as one request line; the
		// bound is what keeps them out, so they are sent as bodies of
		// what fits and as paths where they fit.
		resp, rb := ts.request(t, tc.method, tc.target, nil)
		if resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge {
			continue // net/http refused the request line before any handler
		}
		e := apiError(t, rb)
		if !answerable(e.Code) {
			t.Errorf("%.40s %.60s: code %q", tc.method, tc.target, e.Code)
		}
		if len(rb) > 400 || len(e.Message) > protocol.MaxMessageBytes {
			t.Errorf("%.40s %.60s: %d-byte answer %.300s", tc.method, tc.target, len(rb), rb)
		}
		if strings.Contains(string(rb), strings.Repeat("x", 40)) {
			t.Errorf("%.40s %.60s: echoes a long run of the input: %s", tc.method, tc.target, rb)
		}
	}
	// Within the header bound: a 10,000-byte id.
	id := strings.Repeat("a", 10_000)
	for _, tgt := range []string{"/v1/jobs/" + id, "/v1/jobs/" + id + "/cancel?reason=x", "/v1/jobs?state=" + id} {
		method := "GET"
		if strings.Contains(tgt, "cancel") {
			method = "POST"
		}
		resp, rb := ts.request(t, method, tgt, nil)
		e := apiError(t, rb)
		if resp.StatusCode != http.StatusBadRequest || e.Code != protocol.CodeInvalidJob || len(rb) > 300 ||
			!strings.Contains(e.Message, `"`+strings.Repeat("a", 32)+`…"`) {
			t.Errorf("%.60s: %d %s, want invalid_job with a 32-byte quoted prefix", tgt, resp.StatusCode, rb)
		}
	}
	// A submission whose spec carries a 100,000-byte id and keys.
	body := `{"spec":{"contract":"cyber/worker/v1","job_id":"` + long + `","` + long + `":1}}`
	resp, rb := ts.request(t, http.MethodPost, "/v1/jobs", []byte(body))
	if e := apiError(t, rb); resp.StatusCode != http.StatusBadRequest || len(rb) > 400 {
		t.Errorf("long spec: %d %d bytes %+v", resp.StatusCode, len(rb), e)
	}
	body = `{"spec":{},"retry":{"retryable":["` + long + `"]}}`
	resp, rb = ts.request(t, http.MethodPost, "/v1/jobs", []byte(body))
	if e := apiError(t, rb); resp.StatusCode != http.StatusBadRequest || len(rb) > 400 {
		t.Errorf("long code: %d %d bytes %+v", resp.StatusCode, len(rb), e)
	}
}

// Query strings, routes and bodies are as strict as the envelope.
func TestRequestsAreStrict(t *testing.T) {
	ts := startServer(t, Config{})
	if _, err := ts.client.Submit(context.Background(), spec(t, "q1", 1, 2), 0, nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, target string
		body           string
		status         int
		want           string
	}{
		{"GET", "/v1/jobs?state=queued&state=failed", "", 400, "query parameter state given 2 times"},
		{"GET", "/v1/jobs?color=red", "", 400, `unknown query parameter "color"`},
		{"GET", "/v1/jobs?state=%zz", "", 400, "malformed query string"},
		{"GET", "/v1/jobs?state=nope", "", 400, `state "nope": not a job state`},
		{"GET", "/v1/jobs?limit=0", "", 400, "limit"},
		{"GET", "/v1/jobs?limit=01", "", 400, "limit"},
		{"GET", "/v1/jobs/q1?x=1", "", 400, "unknown query parameter"},
		{"GET", "/v1/jobs/q1/wait?seen=bogus", "", 400, "not a job state"},
		{"GET", "/v1/jobs/q1/wait?until=end&seen=queued", "", 400, "exclude each other"},
		{"GET", "/v1/jobs/q1/wait?until=now", "", 400, `until "now"`},
		{"POST", "/v1/jobs/q1/cancel?reason=a&reason=b", "", 400, "given 2 times"},
		{"POST", "/v1/jobs/q1/cancel?reason=%01", "", 400, "reason: want"},
		{"POST", "/v1/jobs/q1/cancel", `{"reason":"x"}`, 400, "takes no request body"},
		{"GET", "/v1/jobs/q1", "x", 400, "takes no request body"},
		{"GET", "/v1/capabilities?x", "", 400, "unknown query parameter"},
		{"POST", "/v1/jobs?priority=1", `{"spec":{}}`, 400, "unknown query parameter"},
		{"GET", "/v1/jobs/.hidden", "", 400, "job id"},
		{"GET", "/v1/jobs/a%2Fb", "", 400, "job id"},
		{"GET", "/v1/nothing", "", 404, "no such route"},
		{"GET", "/v1/jobs/", "", 404, "no such route"},
		{"GET", "/v1//jobs", "", 404, "no such route"},
		{"GET", "/v1/jobs/../capabilities", "", 404, "no such route"},
		{"OPTIONS", "*", "", 404, "no such route"},
		{"DELETE", "/v1/jobs/q1", "", 405, "the route takes GET"},
		{"PUT", "/v1/jobs", "", 405, "the route takes GET or POST"},
		{"GET", "/v1/jobs/q1/cancel", "", 405, "the route takes POST"},
		{"GET", "/v1/jobs/nosuch", "", 404, `unknown job: "nosuch"`},
		{"POST", "/v1/jobs", `{"spec":{}}`, 400, "invalid_job"},
		{"POST", "/v1/jobs", ``, 400, "submission"},
		{"POST", "/v1/jobs/q1/resolve?attempt=1", "", 400, `as ""`},
		{"POST", "/v1/jobs/q1/resolve?attempt=0&as=retry", "", 400, "attempt"},
		{"POST", "/v1/jobs/q1/resolve?attempt=01&as=retry", "", 400, "attempt"},
		{"POST", "/v1/jobs/q1/resolve?attempt=1&as=forget", "", 400, `as "forget"`},
		{"POST", "/v1/jobs/q1/resolve?attempt=1&as=retry", "", 409, "only a job that ended unknown is resolved"},
		{"POST", "/v1/jobs/nosuch/resolve?attempt=1&as=cancel", "", 404, "unknown job"},
		{"GET", "/v1/jobs/q1/resolve", "", 405, "the route takes POST"},
		{"POST", "/v1/drain?timeout=-1s", "", 400, "timeout"},
		{"POST", "/v1/drain?timeout=1000h", "", 400, "timeout"},
		{"POST", "/v1/drain", "x", 400, "takes no request body"},
		{"GET", "/v1/drain?running=-1", "", 400, "running"},
		{"GET", "/v1/drain?wait=1", "", 400, "unknown query parameter"},
	}
	for _, c := range cases {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		resp, rb := ts.request(t, c.method, c.target, body)
		e := apiError(t, rb)
		if resp.StatusCode != c.status || !answerable(e.Code) || !strings.Contains(e.Error(), c.want) {
			t.Errorf("%s %s: %d %s, want %d with %q", c.method, c.target, resp.StatusCode, rb, c.status, c.want)
		}
		if c.status == 405 && resp.Header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", c.method, c.target)
		}
	}
	if n := jobCount(t, ts); n != 1 {
		t.Fatalf("%d jobs, want the one submitted", n)
	}
}
