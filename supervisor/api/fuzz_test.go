package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/ui"
)

var (
	fuzzOnce   sync.Once
	fuzzServer *testServer
)

// fuzzTarget is one real server for every input of a fuzz run: a
// supervisor (real store, real launcher, unisolated nox-worker) with jobs
// in several states, behind the API on a unix socket. Long polls are cut
// short so that one input never takes seconds.
func fuzzTarget(t testing.TB) *testServer {
	fuzzOnce.Do(func() {
		ts := startServer(&onceTB{TB: t}, Config{LongPoll: 20 * time.Millisecond, HeaderTimeout: 2 * time.Second, BodyTimeout: 2 * time.Second})
		ctx := context.Background()
		for id, body := range map[string][]byte{"ok": spec(t, "ok", 3, 5), "halt": haltSpec(t)} {
			if _, err := ts.client.Submit(ctx, body, 0, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := ts.client.WaitEnd(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		fuzzServer = ts
	})
	if fuzzServer == nil {
		t.Fatal("no fuzz server")
	}
	return fuzzServer
}

// onceTB lets the shared server outlive the input whose test started it:
// its cleanups run when the test binary ends (see runTests).
type onceTB struct{ testing.TB }

func (o *onceTB) Cleanup(fn func()) { processCleanups = append(processCleanups, fn) }
func (o *onceTB) TempDir() string {
	dir, err := os.MkdirTemp("", "api-fuzz")
	if err != nil {
		o.Fatal(err)
	}
	o.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// haltSpec ends failed: a budget of 2 reductions for a 3-reduction program.
func haltSpec(t testing.TB) []byte {
	t.Helper()
	bundle, err := protocol.WrapNox("halt", []byte(add2))
	if err != nil {
		t.Fatal(err)
	}
	js := protocol.JobSpec{Contract: protocol.ContractV1, JobID: "halt", Operation: protocol.OpExecute, Profile: protocol.ProfilePublicTrace,
		Program: protocol.ProgramSpec{Bundle: bundle}, Inputs: []uint64{1, 2}, Limits: protocol.Limits{Reductions: 2}}
	b, err := js.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// framingHeaders are set by the harness itself: they decide how net/http
// reads the request, which is net/http's business, not the API's.
var framingHeaders = map[string]bool{"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Expect": true, "Trailer": true, "Te": true, "Upgrade": true}

// FuzzAPI sends arbitrary requests (method, target, headers, body) to the
// whole API. Whatever arrives: the server never panics and keeps serving,
// every request net/http could parse is answered with a contract or API
// code in a bounded JSON error body (or a bounded success), and no
// message exceeds the contract's bound or holds a control character.
func FuzzAPI(f *testing.F) {
	ok := string(spec(f, "fz", 1, 2))
	for _, seed := range []struct{ method, target, headers, body string }{
		{"POST", "/v1/jobs", "Content-Type: application/json", `{"spec":` + ok + `}`},
		{"POST", "/v1/jobs", "", `{"spec":` + ok + `,"spec":` + ok + `}`},
		{"POST", "/v1/jobs", "", `{"spec":` + ok + `,"priority":1,"priority":2}`},
		{"POST", "/v1/jobs", "", `{"spec":` + ok + `,"retry":{"max_attempts":3,"backoff_ns":1,"max_backoff_ns":2,"retryable":["io_error"]}}`},
		{"POST", "/v1/jobs", "", `{"spec":{"contract":"cyber/worker/v1","contract":"x"}}`},
		{"POST", "/v1/jobs", "", `[]`},
		{"GET", "/v1/jobs", "", ""},
		{"GET", "/v1/jobs?state=accepted&limit=1", "", ""},
		{"GET", "/v1/jobs?after=ok&state=failed", "", ""},
		{"GET", "/v1/jobs?state=x&state=y", "", ""},
		{"GET", "/v1/jobs/ok", "Accept: */*", ""},
		{"GET", "/v1/jobs/ok/result", "", ""},
		{"GET", "/v1/jobs/halt/result", "", ""},
		{"GET", "/v1/jobs/ok/events", "", ""},
		{"GET", "/v1/jobs/ok/wait?seen=queued", "", ""},
		{"GET", "/v1/jobs/halt/wait?until=end", "", ""},
		{"POST", "/v1/jobs/ok/cancel?reason=why", "", ""},
		{"POST", "/v1/jobs/fz/cancel", "", ""},
		{"GET", "/v1/overview", "", ""},
		{"GET", "/v1/jobs?cursor=", "", ""},
		{"GET", "/v1/jobs?cursor=AQAAAAAAAAAq3q2-7wAAAAA&limit=2", "", ""},
		{"GET", "/v1/jobs?state=failed&op=execute&code=budget_exhausted&since=2026-01-01T00:00:00Z&until=2030-01-01T00:00:00Z", "", ""},
		{"GET", "/v1/jobs?program=" + strings.Repeat("ab", 32), "", ""},
		{"GET", "/v1/lookup/o", "", ""},
		{"GET", "/v1/lookup/h%61lt", "", ""},
		{"GET", "/v1/capabilities", "", ""},
		{"GET", "/metrics", "", ""},
		{"GET", "/v1/store/check", "", ""},
		{"GET", "/v1/store/backup", "", ""},
		{"GET", "/v1/store/check?x=1", "", "body"},
		{"HEAD", "/v1/jobs/ok", "", ""},
		{"DELETE", "/v1/jobs/ok", "", ""},
		{"GET", "/v1/jobs/%2e%2e/x", "", ""},
		{"GET", "/v1/jobs/" + strings.Repeat("a", 300), "", ""},
		{"OPTIONS", "*", "", ""},
		{"CONNECT", "/v1/jobs", "", ""},
		{"GET", "http://supervisor/v1/jobs", "", ""},
		{"GET", "/v1/jobs/ok", "X-A: 1\nX-A: 2\nCookie: a=b", "body"},
		{"GET", "/ui/", "", ""},
		{"GET", "/ui/jobs?state=failed&op=execute&since=2h&limit=3", "", ""},
		{"GET", "/ui/jobs?cursor=x&until=2026-12-06", "", ""},
		{"GET", "/ui/jobs?id=o", "", ""},
		{"GET", "/ui/jobs/halt", "If-None-Match: \"x\"", ""},
		{"GET", "/ui/hosts", "", ""},
		{"GET", "/ui/fencing", "", ""},
		{"GET", "/ui/static/app.js", "", ""},
		{"POST", "/ui/jobs", "", "x"},
	} {
		f.Add(seed.method, seed.target, seed.headers, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, method, target, headers string, body []byte) {
		if len(body) > 1<<20 || len(method)+len(target)+len(headers) > 32<<10 {
			return
		}
		ts := fuzzTarget(t)
		raw, wellFormed := buildRequest(method, target, headers, body)
		resp, rb, err := ts.exchangeAs(t, raw, method)
		if err != nil {
			if wellFormed {
				t.Fatalf("no answer to a well-formed request: %v\n%q", err, raw[:min(len(raw), 300)])
			}
			return
		}
		if resp.StatusCode < 200 || resp.StatusCode > 599 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if n := ts.srv.Stats().Panics.Load(); n > 0 {
			t.Fatalf("%d handler panics:\n%s", n, ts.logs)
		}
		if !wellFormed && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			// net/http refused the framing itself, before any handler.
			if resp.StatusCode < 400 || len(rb) > 256 {
				t.Fatalf("framing answer %d with %d bytes", resp.StatusCode, len(rb))
			}
			return
		}
		checkAnswer(t, resp, rb, method)
	})
}

// checkAnswer holds an answer to the API's rules.
func checkAnswer(t *testing.T, resp *http.Response, body []byte, method string) {
	t.Helper()
	if method == http.MethodHead {
		if len(body) != 0 {
			t.Fatalf("HEAD answered with a body")
		}
		return
	}
	if dashboardAnswer(t, resp, body) {
		return
	}
	if resp.StatusCode >= 300 {
		if len(body) > MaxErrorReplyBytes {
			t.Fatalf("%d-byte error answer", len(body))
		}
		var eb ErrorBody
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&eb); err != nil || eb.Error == nil {
			t.Fatalf("%d answer is not an error body: %q (%v)", resp.StatusCode, body, err)
		}
		e := eb.Error
		if !answerable(e.Code) {
			t.Fatalf("code %q is neither the contract's nor the API's", e.Code)
		}
		if len(e.Message) > protocol.MaxMessageBytes || !utf8.ValidString(e.Message) || strings.ContainsFunc(e.Message, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("message not a bounded printable line: %q", e.Message)
		}
		return
	}
	if len(body) > maxListBytes+(4<<20) {
		t.Fatalf("%d-byte answer", len(body))
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/plain"): // /metrics
		return
	case ct == "application/octet-stream": // /v1/store/backup
		return
	}
	if !json.Valid(body) {
		t.Fatalf("%d answer is not JSON: %.200q", resp.StatusCode, body)
	}
}

// dashboardAnswer holds an answer of the dashboard (/ui/: HTML pages,
// their static files, a lookup's redirect, a live update's 304) to its
// rules, and reports whether it was one: every answer carries the strict
// CSP; a body is bounded valid UTF-8; a redirect goes to a job's page.
func dashboardAnswer(t *testing.T, resp *http.Response, body []byte) bool {
	t.Helper()
	if resp.Header.Get("Content-Security-Policy") != ui.ContentSecurityPolicy {
		return false
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case resp.StatusCode == http.StatusNotModified:
		if len(body) != 0 {
			t.Fatalf("304 with a body")
		}
	case resp.StatusCode == http.StatusMovedPermanently:
		if resp.Header.Get("Location") != ui.Prefix {
			t.Fatalf("301 to %q", resp.Header.Get("Location"))
		}
	case resp.StatusCode == http.StatusSeeOther:
		if !strings.HasPrefix(resp.Header.Get("Location"), ui.Prefix+"jobs/") {
			t.Fatalf("303 to %q", resp.Header.Get("Location"))
		}
	case strings.HasPrefix(ct, "text/html"), strings.HasPrefix(ct, "text/css"), strings.HasPrefix(ct, "text/javascript"), strings.HasPrefix(ct, "image/svg+xml"):
		if len(body) > 4<<20 || !utf8.Valid(body) {
			t.Fatalf("%d dashboard answer of %d bytes (valid UTF-8 %v)", resp.StatusCode, len(body), utf8.Valid(body))
		}
	default:
		t.Fatalf("%d dashboard answer of type %q", resp.StatusCode, ct)
	}
	return true
}

// buildRequest writes an HTTP/1.1 request with the harness's own framing
// headers, and reports whether net/http can parse it at all: the method a
// token, the target a request URI, every header a valid field, all of it
// within the header bound.
func buildRequest(method, target, headers string, body []byte) ([]byte, bool) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: supervisor\r\n", method, target)
	valid := method != "" && httpguts.ValidHeaderFieldName(method) && target != "" && !strings.ContainsFunc(target, func(r rune) bool { return r <= ' ' || r == 0x7f })
	for _, line := range strings.Split(headers, "\n") {
		if line == "" {
			continue
		}
		// A line without a colon is written as a header with an empty
		// value ("U" becomes "U: "): well-formed if its name is.
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimLeft(value, " \t")
		if framingHeaders[http.CanonicalHeaderKey(name)] {
			continue
		}
		if !httpguts.ValidHeaderFieldName(name) || !httpguts.ValidHeaderFieldValue(value) || strings.ContainsAny(value, "\r\n") {
			valid = false
		}
		fmt.Fprintf(&b, "%s: %s\r\n", name, value)
	}
	fmt.Fprintf(&b, "Connection: close\r\nContent-Length: %d\r\n\r\n", len(body))
	if b.Len() > maxHeaderBytes {
		valid = false
	}
	if valid {
		if _, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b.Bytes()))); err != nil {
			valid = false
		}
	}
	b.Write(body)
	return b.Bytes(), valid
}
