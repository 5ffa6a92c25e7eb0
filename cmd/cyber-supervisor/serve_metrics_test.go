package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// serve --metrics-listen serves /metrics, /healthz and /version over TCP,
// GET and HEAD only; every other path is 404, every other method 405.
// Over a real daemon and a real TCP connection. Fails before the flag: an
// unknown flag.
func TestMetricsListener(t *testing.T) {
	home := t.TempDir()
	d := startServe(t, nil, "--home", home, "serve", "--isolation", "off", "--slots", "1", "--metrics-listen", "127.0.0.1:0", "--log-format", "json")
	ready := d.ready(t)
	url, _ := ready["metrics"].(string)
	base, ok := strings.CutSuffix(url, "/metrics")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("ready line's metrics %q", url)
	}
	if r := cli(t, "--home", home, "submit", writeFile(t, t.TempDir(), "add.nox", add), "--input-values", "3,5", "--wait"); r.code != 0 {
		t.Fatalf("submit: %+v", r)
	}
	get := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get("GET", "/metrics")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") ||
		!strings.Contains(body, `cyber_supervisor_jobs{state="accepted"} 1`) || !strings.Contains(body, "cyber_supervisor_api_connections_max") {
		t.Fatalf("GET /metrics: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp, body := get("HEAD", "/metrics"); resp.StatusCode != 200 || body != "" {
		t.Errorf("HEAD /metrics: %d %q", resp.StatusCode, body)
	}
	if resp, body := get("GET", "/healthz"); resp.StatusCode != 200 || body != "ok\n" {
		t.Errorf("GET /healthz: %d %q", resp.StatusCode, body)
	}
	resp, body = get("GET", "/version")
	var v buildVersion
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &v) != nil || v.Module != "github.com/cyberia-to/cyber-supervisor" || v.Go == "" {
		t.Errorf("GET /version: %d %q", resp.StatusCode, body)
	}
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
		if resp, _ := get(m, "/metrics"); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /metrics: %d, Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	if resp, _ := get("POST", "/healthz"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz: %d", resp.StatusCode)
	}
	// The API is not here: nothing of it, not even a read.
	for _, p := range []string{"/", "/v1/jobs", "/v1/capabilities", "/v1/neuron", "/metrics/", "/healthz/x", "/ui/"} {
		if resp, _ := get("GET", p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
	if resp, _ := get("POST", "/v1/jobs"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /v1/jobs: %d, want 404", resp.StatusCode)
	}
	// A path the mux would clean and redirect is a 404 too (raw, as a
	// client would not send it).
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /v1/../metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if line, _ := bufio.NewReader(c).ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 404") {
		t.Errorf("GET /v1/../metrics: %q", line)
	}
}

// An address that is not loopback is refused before anything starts,
// unless --metrics-allow-remote says so. Fails before the flag.
func TestMetricsListenRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics-listen", "0.0.0.0:9464"}, "0.0.0.0 is not a loopback address"},
		{[]string{"--metrics-listen", "192.0.2.1:9464"}, "192.0.2.1 is not a loopback address"},
		{[]string{"--metrics-listen", "[::]:9464"}, ":: is not a loopback address"},
		{[]string{"--metrics-listen", ":9464"}, "every address, not loopback"},
		{[]string{"--metrics-listen", "metrics.example.com:9464"}, "not a loopback address"},
		{[]string{"--metrics-listen", "127.0.0.1"}, "want HOST:PORT"},
		{[]string{"--metrics-allow-remote"}, "--metrics-allow-remote needs --metrics-listen"},
	} {
		home := filepath.Join(t.TempDir(), "home")
		r := cli(t, append([]string{"--home", home, "serve", "--isolation", "off"}, c.args...)...)
		if r.code != protocol.ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, r.code, r.stderr, c.want)
		}
		if _, err := os.Stat(home); !os.IsNotExist(err) {
			t.Errorf("%v: the home was made", c.args)
		}
	}
}

// A port another process holds is busy (exit 4, which the unit's
// Restart=on-failure tries again), named, and the store is closed again.
func TestMetricsListenPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	home := t.TempDir()
	env := jsonRun(t, protocol.ExitUnavailable, "--home", home, "serve", "--isolation", "off", "--slots", "1", "--metrics-listen", ln.Addr().String())
	if env.Error == nil || env.Error.Code != protocol.CodeBusy || !strings.Contains(env.Error.Message, ln.Addr().String()+": the address is in use") {
		t.Fatalf("envelope %+v", env.Error)
	}
	// Nothing was left holding the home: a daemon starts on it.
	startServe(t, nil, "--home", home, "serve", "--isolation", "off", "--slots", "1", "--log-format", "json").ready(t)
}
