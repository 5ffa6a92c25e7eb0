package api

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/ui"
)

// The dashboard on the daemon's socket: each page rendered from a real
// supervisor with real jobs, read-only, and written to the strict CSP
// (integration/dashboard_browser_test.go loads them in a real browser).

// inlineCode finds what a strict CSP would block in a page: a script
// element with a body, a style element or attribute, an event handler
// attribute, a javascript: URL.
var inlineCode = regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]|<style[\s>]|\sstyle\s*=|\son[a-z]+\s*=|javascript:`)

func submitLimited(t *testing.T, ts *testServer, id string, reductions uint64) {
	t.Helper()
	bundle, err := protocol.WrapNox(id, []byte(add2))
	if err != nil {
		t.Fatal(err)
	}
	js := protocol.JobSpec{Contract: protocol.ContractV1, JobID: id, Operation: protocol.OpExecute, Profile: protocol.ProfilePublicTrace,
		Program: protocol.ProgramSpec{Bundle: bundle}, Inputs: []uint64{3, 4}, Limits: protocol.Limits{Reductions: reductions}}
	b, err := js.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.client.Submit(context.Background(), b, 0, nil); err != nil {
		t.Fatal(err)
	}
}

func (ts *testServer) page(t testing.TB, method, target string, header ...string) (*http.Response, string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: supervisor\r\nConnection: close\r\n", method, target)
	for _, h := range header {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	resp, body, err := ts.exchangeAs(t, []byte(b.String()), method)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	return resp, string(body)
}

func TestDashboardPages(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	if _, err := ts.client.Submit(ctx, spec(t, "ok-1", 3, 4), 0, nil); err != nil {
		t.Fatal(err)
	}
	submitLimited(t, ts, "fail-1", 1)
	for _, id := range []string{"ok-1", "fail-1"} {
		if _, err := ts.client.WaitEnd(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ts.client.InitNeuron(ctx, "testnet"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		target string
		want   []string
	}{
		{"/ui/", []string{"Overview", "accepted", "Throughput", "Failures by error code", "<svg class=\"chart\""}},
		{"/ui/jobs", []string{`href="/ui/jobs/ok-1"`, `href="/ui/jobs/fail-1"`, "newest first"}},
		{"/ui/jobs?state=failed", []string{`href="/ui/jobs/fail-1"`}},
		{"/ui/jobs/ok-1", []string{"ok-1", "Spec", "Attempts", "Timeline", "Acceptance", "attempt 1 at", "cyber-supervisor --home " + ts.sup.Home() + " status ok-1"}},
		{"/ui/jobs/fail-1", []string{"fail-1", "failed", "no attempt was accepted"}},
		{"/ui/hosts", []string{"A single host", "this daemon"}},
		{"/ui/fencing", []string{"Neuron", "testnet", "Placement", "Grant", "whose attempt is unknown"}},
	} {
		resp, body := ts.page(t, "GET", c.target)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %s %s\n%.2000s", c.target, resp.Status, resp.Header.Get("Content-Type"), body)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: the page does not hold %q", c.target, w)
			}
		}
		if m := inlineCode.FindString(body); m != "" {
			t.Errorf("GET %s: inline code a strict CSP blocks: %q", c.target, m)
		}
		if got := resp.Header.Get("Content-Security-Policy"); got != ui.ContentSecurityPolicy {
			t.Errorf("GET %s: Content-Security-Policy %q", c.target, got)
		}
		for h, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
			if got := resp.Header.Get(h); got != want {
				t.Errorf("GET %s: %s %q, want %q", c.target, h, got, want)
			}
		}
	}
	if _, body := ts.page(t, "GET", "/ui/jobs?state=failed"); strings.Contains(body, `href="/ui/jobs/ok-1"`) {
		t.Error("state=failed lists an accepted job")
	}

	// Read-only: every other method is 405; HEAD answers without a body.
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		if resp, _ := ts.page(t, m, "/ui/jobs", "Content-Length: 0"); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /ui/jobs: %s Allow %q", m, resp.Status, resp.Header.Get("Allow"))
		}
	}
	if resp, _ := ts.page(t, "GET", "/ui"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %s to %q, want 301 to /ui/", resp.Status, resp.Header.Get("Location"))
	}
	if resp, _ := ts.page(t, "POST", "/ui", "Content-Length: 0"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui: %s, want 405", resp.Status)
	}
	if resp, body := ts.page(t, "HEAD", "/ui/"); resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD /ui/: %s with %d bytes", resp.Status, len(body))
	}

	// The live update's question: an unchanged page is 304 by its tag.
	resp, _ := ts.page(t, "GET", "/ui/jobs/ok-1")
	tag := resp.Header.Get("ETag")
	if resp, _ := ts.page(t, "GET", "/ui/jobs/ok-1", "If-None-Match: "+tag); tag == "" || resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match %s: %s, want 304", tag, resp.Status)
	}
	if resp, _ := ts.page(t, "GET", "/ui/jobs/ok-1", `If-None-Match: "other"`); resp.StatusCode != http.StatusOK {
		t.Errorf("If-None-Match of another tag: %s, want 200", resp.Status)
	}

	// Lookup: a unique prefix opens the job; errors are pages with codes.
	if resp, _ := ts.page(t, "GET", "/ui/jobs?id=fail"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/jobs/fail-1" {
		t.Errorf("lookup fail: %s → %q", resp.Status, resp.Header.Get("Location"))
	}
	for _, c := range []struct {
		target string
		status int
		want   string
	}{
		{"/ui/jobs/nope", 404, "unknown_job"},
		{"/ui/jobs?id=zzz", 404, "unknown_job"},
		{"/ui/jobs?state=bogus", 400, "not a job state"},
		{"/ui/jobs?since=yesterday", 400, "want a time"},
		{"/ui/jobs?colour=red", 400, "unknown filter"},
		{"/ui/jobs?cursor=garbage", 400, "cursor"},
		{"/ui/nowhere", 404, "no such page"},
		{"/ui/jobs/ok-1?x=1", 400, "takes no query"},
	} {
		resp, body := ts.page(t, "GET", c.target)
		if resp.StatusCode != c.status || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %s, want %d with %q\n%.1500s", c.target, resp.Status, c.status, c.want, body)
		}
	}

	// The job page's spec is the frozen spec: its digest is the job's.
	raw, err := ts.client.Spec(ctx, "ok-1")
	st, serr := ts.client.Status(ctx, "ok-1")
	if err != nil || serr != nil || fmt.Sprintf("%x", sha256.Sum256(raw)) != st.Job.SpecDigest {
		t.Errorf("GET /v1/jobs/ok-1/spec: %v %v: digest of %.100q is not %s", err, serr, raw, st.Job.SpecDigest)
	}
	if _, err := ts.client.Spec(ctx, "nope"); protocol.AsError(err).Code != protocol.CodeUnknownJob {
		t.Errorf("GET /v1/jobs/nope/spec: %v, want unknown_job", err)
	}

	// The static files are the binary's own.
	for _, f := range []string{"app.js", "style.css", "icon.svg"} {
		if resp, body := ts.page(t, "GET", "/ui/static/"+f); resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Errorf("GET /ui/static/%s: %s", f, resp.Status)
		}
	}
}
