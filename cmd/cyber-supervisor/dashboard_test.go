package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// dashboardProc is a running dashboard command and the URL it printed.
type dashboardProc struct {
	url *url.URL
}

// startDashboard runs the dashboard command on home and reads the URL
// it prints; the test's end interrupts it (SIGINT) and expects exit 0.
func startDashboard(t *testing.T, home string, extra ...string) *dashboardProc {
	t.Helper()
	cmd := exec.Command(cliBin, append([]string{"--home", home, "dashboard"}, extra...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	return &dashboardProc{url: testenv.StartDashboard(t, cmd)}
}

// dashAnswer is one answer of the dashboard's port.
type dashAnswer struct {
	status int
	header http.Header
	body   string
}

// ask sends one request to the dashboard's port: host "" is the URL's,
// cookie "" sends none. Redirects are not followed.
func (d *dashboardProc) ask(t *testing.T, method, path, host, cookie string) dashAnswer {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+d.url.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: time.Minute}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return dashAnswer{resp.StatusCode, resp.Header, string(b)}
}

// checkDashboard runs the port's rules against d: a refusal without
// the token, a wrong token or host; the token made a cookie; GET and
// HEAD only; the routes it passes on and those it keeps; strict headers
// on every answer; and no byte of the neuron's key anywhere. It returns
// every answer's text.
func checkDashboard(t *testing.T, d *dashboardProc, job string) string {
	t.Helper()
	var all strings.Builder
	seen := func(what string, a dashAnswer) dashAnswer {
		t.Helper()
		for _, h := range dashboardHeaders {
			if got := a.header.Values(h[0]); len(got) != 1 || got[0] != h[1] {
				t.Errorf("%s: header %s is %q, want %q", what, h[0], got, h[1])
			}
		}
		if !strings.Contains(a.header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("%s: a policy that allows inline script", what)
		}
		for k, v := range a.header {
			all.WriteString(k + ": " + strings.Join(v, ",") + "\n")
		}
		all.WriteString(a.body)
		return a
	}
	refused := func(what string, a dashAnswer, status int, code protocol.Code) {
		t.Helper()
		seen(what, a)
		var eb struct{ Error *protocol.Error }
		if a.status != status || json.Unmarshal([]byte(a.body), &eb) != nil || eb.Error == nil || eb.Error.Code != code {
			t.Errorf("%s: %d %s, want %d with %s", what, a.status, a.body, status, code)
		}
	}
	token := d.url.Query().Get("token")
	port := d.url.Port()
	cookieName := "cyber_supervisor_dashboard_" + port
	refused("no token", d.ask(t, "GET", "/v1/jobs", "", ""), 403, protocol.CodeForbidden)
	refused("no token, a page", d.ask(t, "GET", "/ui/", "", ""), 403, protocol.CodeForbidden)
	refused("a wrong token", d.ask(t, "GET", "/ui/?token=00"+token[2:], "", ""), 403, protocol.CodeForbidden)
	refused("a wrong cookie", d.ask(t, "GET", "/v1/jobs", "", cookieName+"=x"+token[1:]), 403, protocol.CodeForbidden)
	// The token of the URL becomes a cookie, and leaves the URL.
	a := seen("the URL", d.ask(t, "GET", d.url.RequestURI(), "", ""))
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/ui/" {
		t.Fatalf("the URL: %d, Location %q", a.status, a.header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == cookieName {
			cookie = c
		}
	}
	if cookie == nil || cookie.Value != token || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" {
		t.Fatalf("the URL's cookie: %+v", cookie)
	}
	good := cookieName + "=" + token
	// DNS rebinding: a name that resolves to loopback is still refused.
	for _, host := range []string{"evil.example:" + port, "127.0.0.1.nip.io:" + port, "127.0.0.1:1", "localhost"} {
		refused("host "+host, d.ask(t, "GET", "/v1/jobs", host, good), 403, protocol.CodeForbidden)
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		if a := seen("host "+host, d.ask(t, "GET", "/v1/jobs", host, good)); a.status != 200 || !strings.Contains(a.body, job) {
			t.Errorf("host %s: %d %.200s", host, a.status, a.body)
		}
	}
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		a := d.ask(t, m, "/v1/jobs", "", good)
		refused(m, a, 405, protocol.CodeInvalidJob)
		if a.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: Allow %q", m, a.header.Get("Allow"))
		}
	}
	// The reads the pages use pass; the socket's own routes do not.
	for _, p := range []string{"/v1/jobs/" + job, "/v1/jobs/" + job + "/events", "/v1/capabilities", "/v1/neuron", "/v1/grant",
		"/v1/placement", "/v1/progs", "/v1/invocations", "/v1/operations"} {
		if a := seen(p, d.ask(t, "GET", p, "", good)); a.status != 200 {
			t.Errorf("GET %s: %d %.300s", p, a.status, a.body)
		}
	}
	if a := seen("HEAD", d.ask(t, "HEAD", "/v1/jobs/"+job, "", good)); a.status != 200 || a.body != "" {
		t.Errorf("HEAD: %d %q", a.status, a.body)
	}
	for _, p := range []string{"/v1/store/backup", "/v1/store/check", "/metrics", "/v1/drain", "/v1/jobsx", "/x"} {
		refused(p, d.ask(t, "GET", p, "", good), 404, protocol.CodeInvalidJob)
	}
	if a := seen("/", d.ask(t, "GET", "/", "", good)); a.status != http.StatusSeeOther || a.header.Get("Location") != "/ui/" {
		t.Errorf("/: %d %q", a.status, a.header.Get("Location"))
	}
	// The pages, as the daemon's API serves them under /ui/, and their
	// files.
	for _, p := range []string{"/ui/", "/ui/jobs", "/ui/jobs?state=accepted", "/ui/jobs/" + job, "/ui/fencing", "/ui/hosts"} {
		a := seen(p, d.ask(t, "GET", p, "", good))
		if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") || !strings.Contains(a.body, "</html>") {
			t.Errorf("GET %s: %d %q %.300s", p, a.status, a.header.Get("Content-Type"), a.body)
		}
		if strings.Contains(a.body, "<script>") || strings.Contains(a.body, " style=") {
			t.Errorf("GET %s: inline script or style", p)
		}
	}
	if a := seen("the job's page", d.ask(t, "GET", "/ui/jobs/"+job, "", good)); !strings.Contains(a.body, job) {
		t.Errorf("the job's page does not name the job")
	}
	for _, p := range []string{"/ui/static/app.js", "/ui/static/style.css"} {
		if a := seen(p, d.ask(t, "GET", p, "", good)); a.status != 200 || a.body == "" {
			t.Errorf("GET %s: %d", p, a.status)
		}
	}
	refused("a page, POST", d.ask(t, "POST", "/ui/jobs", "", good), 405, protocol.CodeInvalidJob)
	return all.String()
}

// noKeyIn fails when text holds the home's neuron key in any form.
func noKeyIn(t *testing.T, home, text string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(neuron.VaultDir(home), neuron.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	secret := strings.ToLower(lines[len(lines)-1])
	sb, err := hex.DecodeString(secret)
	if err != nil || len(sb) == 0 {
		t.Fatalf("the key file's last line is not the key in hex: %v", err)
	}
	lower := strings.ToLower(text)
	if !strings.Contains(lower, "public_key") {
		t.Fatal("the answers hold no neuron: the check would prove nothing")
	}
	for _, f := range []string{secret, base64.StdEncoding.EncodeToString(sb), base64.RawURLEncoding.EncodeToString(sb), string(sb)} {
		if strings.Contains(lower, strings.ToLower(f)) || strings.Contains(text, f) {
			t.Fatal("the neuron's key in the dashboard's answers")
		}
	}
}

// The dashboard command over real HTTP: on a home no daemon owns it
// reads the store; once a daemon starts, the same dashboard asks the
// daemon (a job submitted through it shows); the rules of the port hold
// either way, and no answer holds the neuron's key.
func TestDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an end-to-end run of the built binaries and a daemon")
	}
	home := t.TempDir()
	job, _ := oneShotHome(t, home)
	d := startDashboard(t, home)
	if d.url.Hostname() != "127.0.0.1" || d.url.Path != "/ui/" {
		t.Errorf("URL %s", d.url)
	}
	text := checkDashboard(t, d, job)
	serveBin(t, home)
	env := jsonRun(t, 0, "--home", home, "submit", example("add.nox"), "--input-values", "1,2")
	submitted := resultOf(t, env.Result)["job_id"].(string)
	text += checkDashboard(t, d, job)
	good := "cyber_supervisor_dashboard_" + d.url.Port() + "=" + d.url.Query().Get("token")
	if a := d.ask(t, "GET", "/v1/jobs/"+submitted, "", good); a.status != 200 || !strings.Contains(a.body, submitted) {
		t.Errorf("a job submitted to the daemon: %d %.200s", a.status, a.body)
	}
	noKeyIn(t, home, text)
}

// --listen takes loopback addresses only.
func TestDashboardListensOnLoopbackOnly(t *testing.T) {
	home := t.TempDir()
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:8080", "example.com:80", "127.0.0.1", "127.0.0.1:http"} {
		env := jsonRun(t, protocol.ExitUsage, "--home", home, "dashboard", "--listen", addr)
		if env.Error == nil || env.Error.Code != protocol.CodeUsage || !strings.Contains(env.Error.Message, "--listen") {
			t.Errorf("--listen %s: %+v", addr, env.Error)
		}
	}
	// A home with neither a daemon nor a store has nothing to show.
	env := jsonRun(t, protocol.ExitUnavailable, "--home", home, "dashboard")
	if env.Error == nil || !strings.Contains(env.Error.Message, "no daemon on") {
		t.Errorf("an empty home: %+v", env.Error)
	}
}
