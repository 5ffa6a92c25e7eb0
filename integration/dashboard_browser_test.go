package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/ui"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
)

// The dashboard in a real browser: Debian's chromium, driven through the
// DevTools protocol by chromedp (which downloads nothing), against a real
// daemon with real jobs. The daemon serves the pages on its unix socket;
// the browser reaches them through `cyber-supervisor dashboard`, the
// loopback port with a token in front that an operator opens (a browser
// cannot dial a unix socket).

// fencingTour gives the home a neuron, a grant, a prog and two
// invocations: one completed, one whose act was taken by hand, its
// attempt unknown until reconciled. It returns that operation's id.
func fencingTour(t *testing.T, home string) string {
	t.Helper()
	h := func(args ...string) []string { return append([]string{"--home", home}, args...) }
	must := func(args ...string) string {
		t.Helper()
		r := cli(t, h(args...)...)
		if r.code != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
		return strings.TrimSpace(r.stdout)
	}
	must("neuron", "init", "--network", "devnet")
	must("grant", "set", "--revision", "0", "--acts", "emit")
	prog := filepath.Join(t.TempDir(), "emit2.nox")
	emitTwice := fmt.Sprintf("[3 [[16 [[1 %d] [1 0]]] [16 [[1 %d] [1 0]]]]]", hostact.TagEmit, hostact.TagEmit)
	if err := os.WriteFile(prog, []byte(emitTwice), 0o644); err != nil {
		t.Fatal(err)
	}
	id := must("prog", "install", prog, "--acts", "emit")
	must("invoke", id, "--input-values", "5", "--wait")
	// With the placement released the next invocation waits on its act;
	// a manual take records an attempt that only reconcile resolves.
	var pl struct {
		Generation string `json:"generation"`
	}
	if err := json.Unmarshal(cliJSON(t, 0, h("placement", "show")...).Result, &pl); err != nil {
		t.Fatal(err)
	}
	must("placement", "release", "--generation", pl.Generation)
	inv := must("invoke", id, "--input-values", "7")
	must("operation", "take", inv)
	var ops []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(cliJSON(t, 0, h("operation", "list", inv)...).Result, &ops); err != nil || len(ops) != 1 {
		t.Fatalf("operation list: %v %v", ops, err)
	}
	return ops[0].ID
}

// chromiumPath is the browser, or the reason there is none: under
// REQUIRE_ISOLATION=1 (CI) a missing chromium is a failure, elsewhere
// the test skips and says why.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if p := "/usr/bin/chromium"; fileExists(p) {
		return p
	}
	if os.Getenv("REQUIRE_ISOLATION") == "1" {
		t.Fatal("REQUIRE_ISOLATION=1 but chromium is not installed (scripts/test-setup.sh installs Debian's chromium)")
	}
	t.Skip("chromium is not installed: the dashboard's browser test needs it (scripts/test-setup.sh; REQUIRE_ISOLATION=1 makes this a failure)")
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// shotsDir is where the screenshots go: $ARTIFACTS_DIR/dashboard when
// set, else a directory of their own under the temp dir that outlives the
// test (its path is logged).
func shotsDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("ARTIFACTS_DIR"); d != "" {
		dir := filepath.Join(d, "dashboard")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir, err := os.MkdirTemp("", "dashboard-shots-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// startDashboard runs `cyber-supervisor dashboard` on home, on a free
// loopback port, and returns the URL it prints (with its token); the
// test's end interrupts it.
func startDashboard(t *testing.T, home string) *url.URL {
	t.Helper()
	return testenv.StartDashboard(t, exec.Command(supervisorBin, "--home", home, "dashboard", "--listen", "127.0.0.1:0"))
}

// browserLog gathers what the page reports that a test must not see:
// uncaught exceptions, console errors, the browser's own error entries
// (a CSP refusal is one), and securitypolicyviolation events.
type browserLog struct {
	mu     sync.Mutex
	errors []string
}

func (b *browserLog) add(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errors = append(b.errors, fmt.Sprintf(format, args...))
}

func (b *browserLog) take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.errors
	b.errors = nil
	return out
}

// cspWatch records every CSP violation in the page, before any of the
// page's own script runs.
const cspWatch = `window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI + " " + e.sourceFile + ":" + e.lineNumber);
});`

func TestDashboardInBrowser(t *testing.T) {
	requireIsolation(t)
	chromium := chromiumPath(t)
	home := newHome(t)
	d := startDaemon(t, home, 2)
	defer d.stop(t)
	ctx := context.Background()

	// Real jobs: two accepted executes, a failed one (its reduction
	// budget too small), a proved one (a certificate, a verification).
	add := "[5 [[0 2] [0 6]]]"
	for _, j := range []struct {
		id  string
		op  protocol.Operation
		lim protocol.Limits
	}{
		{"ok-1", protocol.OpExecute, protocol.Limits{}},
		{"ok-2", protocol.OpExecute, protocol.Limits{}},
		{"fail-1", protocol.OpExecute, protocol.Limits{Reductions: 1}},
		{"prove-1", protocol.OpProve, protocol.Limits{}},
	} {
		if _, err := d.client.Submit(ctx, jobSpec(t, j.id, j.op, add, []uint64{3, 5}, j.lim), 0, nil); err != nil {
			t.Fatalf("submit %s: %v", j.id, err)
		}
	}
	for _, id := range []string{"ok-1", "ok-2", "fail-1", "prove-1"} {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		st, err := d.client.WaitEnd(wctx, id)
		for err == nil && !st.Job.State.Terminal() {
			st, err = d.client.WaitEnd(wctx, id)
		}
		cancel()
		if err != nil {
			t.Fatalf("wait %s: %v", id, err)
		}
	}

	// The daemon's own answers on its socket: read-only, with the strict
	// headers.
	sock := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", supervisor.SocketPath(home))
	}}}
	resp, err := sock.Post("http://supervisor/ui/jobs", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /ui/jobs: %s, Allow %q; want 405 with Allow: GET, HEAD", resp.Status, resp.Header.Get("Allow"))
	}
	resp, err = sock.Get("http://supervisor/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Content-Security-Policy"); got != ui.ContentSecurityPolicy || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("GET /ui/: CSP %q, X-Frame-Options %q", got, resp.Header.Get("X-Frame-Options"))
	}

	// The browser reaches the pages as an operator does: through the
	// dashboard command's loopback port, which refuses a request without
	// its token.
	tokenURL := startDashboard(t, home)
	base := "http://" + tokenURL.Host
	resp, err = http.Get(base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET /ui/ on the dashboard's port without the token: %s, want 403", resp.Status)
	}

	shots := shotsDir(t)
	t.Logf("dashboard screenshots: %s", shots)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1280, 800),
		chromedp.UserDataDir(t.TempDir()), chromedp.DisableGPU)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// The first call starts the browser, and lives as long as bctx: no
	// timeout on it (chromedp.Run's rule); every later step has one.
	if _, err := chromedp.Call(bctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var blog browserLog
	messages := chromedp.Console(bctx)
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
				blog.add("%s (%s) %s:%d", m, m.Source, m.URL, m.Line)
			}
		}
	}()
	defer func() { cancelBrowser(); <-consoleDone }()
	step := func(what string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		rctx, cancel := context.WithTimeout(bctx, timeout)
		defer cancel()
		if err := chromedp.Do(rctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	get := func(what string, timeout time.Duration, a chromedp.Action[string]) string {
		t.Helper()
		rctx, cancel := context.WithTimeout(bctx, timeout)
		defer cancel()
		v, err := chromedp.Run(rctx, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	eval := func(what, expr string) string {
		t.Helper()
		return get(what, 10*time.Second, chromedp.Evaluate[string](expr))
	}
	// until waits for a page expression to be true: a navigation that a
	// click or a form started has landed. (chromedp.Poll would make the
	// page compile a function, which the page's CSP refuses.)
	until := func(what, expr string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			rctx, cancel := context.WithTimeout(bctx, 10*time.Second)
			v, err := chromedp.Run(rctx, chromedp.Evaluate[string](`String(document.readyState === "complete" && (`+expr+`))`))
			cancel()
			if err == nil && v == "true" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s is not true (last error %v)", what, expr, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	step("viewport", 30*time.Second, chromedp.EmulateViewport(1280, 800))

	// Without the token the browser gets the refusal, not a page; with
	// the printed URL it gets the token as a cookie and every page after.
	step("load without the token", 30*time.Second, chromedp.Navigate(base+"/ui/"), chromedp.WaitReady(chromedp.CSS("body")))
	if body := get("read the refusal", 10*time.Second, chromedp.Text(chromedp.CSS("body"))); !strings.Contains(body, "no token") || strings.Contains(body, "Overview") {
		t.Errorf("the dashboard's port without the token answered:\n%.500s", body)
	}
	step("load the printed URL", 30*time.Second, chromedp.Navigate(tokenURL.String()), chromedp.WaitVisible(chromedp.CSS("#content")))
	// The browser reports the refusals itself: of the page, and of the
	// icon it then asked for (that request may land after the next page).
	eval("settle", `"1"`)
	for _, e := range blog.take() {
		if !strings.Contains(e, "status of 403") {
			t.Errorf("load without the token: %s", e)
		}
	}

	// clean fails the test for anything the page reported since the last
	// check: exceptions, console or browser errors, CSP violations.
	clean := func(where string) {
		t.Helper()
		if v := eval("read CSP violations", `(window.__csp || []).join("\n")`); v != "" {
			t.Errorf("%s: CSP violations:\n%s", where, v)
		}
		// The console's events arrive on their own: a round trip lets
		// those of this page in before they are read.
		eval("settle", `"1"`)
		for _, e := range blog.take() {
			t.Errorf("%s: %s", where, e)
		}
	}
	shot := func(name string) {
		t.Helper()
		rctx, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		png, err := chromedp.Run(rctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	content := chromedp.CSS("#content")
	var text string
	visit := func(name, path, want string) {
		t.Helper()
		step("load "+path, 30*time.Second, chromedp.Navigate(base+path), chromedp.WaitVisible(content))
		text = get("read "+path, 10*time.Second, chromedp.Text(content))
		if !strings.Contains(text, want) {
			t.Errorf("%s: the page does not say %q:\n%.2000s", path, want, text)
		}
		// The script ran: it shows its pause button.
		if eval("script ran on "+path, `String(document.getElementById("pause").hidden)`) != "false" {
			t.Errorf("%s: the pause button is hidden: app.js did not run", path)
		}
		shot(name)
		clean(path)
	}

	visit("overview", "/ui/", "accepted")
	visit("jobs", "/ui/jobs", "fail-1")
	visit("job", "/ui/jobs/prove-1", "Acceptance")
	if !strings.Contains(text, "certificate") {
		t.Errorf("the proved job's page does not say where its certificate is:\n%.2000s", text)
	}
	visit("job-failed", "/ui/jobs/fail-1", "fail-1")
	visit("hosts", "/ui/hosts", "single host")
	visit("fencing-empty", "/ui/fencing", "no neuron")
	unknownOp := fencingTour(t, home)
	visit("fencing", "/ui/fencing", "operation reconcile "+unknownOp+" --attempt 1 --value")

	// Live: a job submitted while the jobs page is open appears on it
	// without a reload (a marker set on the page survives).
	step("open the jobs page", 30*time.Second, chromedp.Navigate(base+"/ui/jobs"), chromedp.WaitVisible(content),
		chromedp.Evaluate[chromedp.Void](`window.__marker = "kept"`))
	if _, err := d.client.Submit(ctx, jobSpec(t, "live-1", protocol.OpExecute, add, []uint64{1, 2}, protocol.Limits{}), 0, nil); err != nil {
		t.Fatal(err)
	}
	step("the new job appears without a reload", 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`a[href="/ui/jobs/live-1"]`)))
	if m := eval("marker", `String(window.__marker)`); m != "kept" {
		t.Errorf("the page was reloaded (marker %q): want the row swapped in live", m)
	}
	clean("live update")

	// The pause holds the page: a job that ends while paused does not
	// appear until the page resumes.
	step("pause", 10*time.Second, chromedp.Click(chromedp.CSS("#pause")), chromedp.WaitVisible(chromedp.CSS("#live.paused")))
	if _, err := d.client.Submit(ctx, jobSpec(t, "live-2", protocol.OpExecute, add, []uint64{2, 2}, protocol.Limits{}), 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.client.WaitEnd(ctx, "live-2"); err != nil {
		t.Fatal(err)
	}
	// Two poll periods and more paused: nothing is swapped in.
	step("stay paused", 30*time.Second, chromedp.Sleep(5*time.Second))
	if n := eval("rows", `String(document.querySelectorAll('a[href="/ui/jobs/live-2"]').length)`); n != "0" {
		t.Errorf("paused, the page still took the new job")
	}
	step("resume", 30*time.Second, chromedp.Click(chromedp.CSS("#pause")), chromedp.WaitVisible(chromedp.CSS(`a[href="/ui/jobs/live-2"]`)))
	clean("pause and resume")

	// Filters: the form's state selects; the URL keeps the filter.
	step("filter by state", 30*time.Second, chromedp.SetValue(chromedp.CSS(`select[name="state"]`), "failed"),
		chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`)))
	until("the filtered page", `location.search.indexOf("state=failed") >= 0`)
	step("the filtered page shows", 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`a[href="/ui/jobs/fail-1"]`)))
	loc := get("location", 10*time.Second, chromedp.Location())
	text = get("read", 10*time.Second, chromedp.Text(content))
	if !strings.Contains(loc, "state=failed") || strings.Contains(text, "ok-1") || strings.Contains(text, "prove-1") {
		t.Errorf("filter state=failed: at %s the page shows:\n%.2000s", loc, text)
	}
	clean("filter form")
	visit("jobs-filtered", "/ui/jobs?op=prove", "prove-1")
	if strings.Contains(text, "ok-1") {
		t.Errorf("filter op=prove shows an execute job:\n%.2000s", text)
	}

	// Lookup by a unique prefix opens the job; an ambiguous one says so.
	step("look up a prefix", 30*time.Second, chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(content),
		chromedp.SendKeys(chromedp.CSS(`form.lookup input[name="id"]`), "prov"),
		chromedp.Submit(chromedp.CSS(`form.lookup input[name="id"]`)))
	until("lookup of prov opens prove-1", `location.pathname === "/ui/jobs/prove-1"`)
	clean("lookup")
	step("look up an ambiguous prefix", 30*time.Second, chromedp.Navigate(base+"/ui/jobs?id=ok-"), chromedp.WaitVisible(content))
	if text = get("read", 10*time.Second, chromedp.Text(content)); !strings.Contains(text, "ambiguous") {
		t.Errorf("lookup of ok-: want an ambiguous-prefix answer, got:\n%.2000s", text)
	}
	// An error page is an error answer: the browser logs its status as a
	// failed load, which is what this step asked for.
	eval("settle", `"1"`)
	blog.take()
}
