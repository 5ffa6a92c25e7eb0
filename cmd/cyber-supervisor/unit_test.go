package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unitFile is the repository's systemd unit.
func unitFile(t *testing.T) (string, map[string]map[string]string) {
	t.Helper()
	path := filepath.Join(repoRoot, "contrib", "systemd", "cyber-supervisor.service")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sections := map[string]map[string]string{}
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			cur = line
			sections[cur] = map[string]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || cur == "" {
				t.Fatalf("%s: line %q", path, line)
			}
			sections[cur][k] = v
		}
	}
	return path, sections
}

// The unit is complete, its stop timeout is above the daemon's stop
// bound, its command line is one this binary accepts, and systemd's own
// verifier finds nothing to say about it (where systemd-analyze exists).
func TestSystemdUnit(t *testing.T) {
	path, u := unitFile(t)
	for _, sec := range []string{"[Unit]", "[Service]", "[Install]"} {
		if u[sec] == nil {
			t.Fatalf("no %s section", sec)
		}
	}
	svc := u["[Service]"]
	for k, want := range map[string]string{"Restart": "on-failure", "KillMode": "mixed", "KillSignal": "SIGTERM", "Delegate": "yes",
		// The daemon tells readiness (sdnotify.go): a unit After= this one
		// starts once the API answers, not once the process exists.
		"Type": "notify", "NotifyAccess": "main"} {
		if svc[k] != want {
			t.Errorf("%s=%q, want %q", k, svc[k], want)
		}
	}
	if !strings.Contains(svc["RestartPreventExitStatus"], "6") {
		t.Errorf("a damaged store (exit 6) would crash-loop: RestartPreventExitStatus=%q", svc["RestartPreventExitStatus"])
	}
	stop, err := time.ParseDuration(svc["TimeoutStopSec"])
	if err != nil || stop <= serveStopBound {
		t.Errorf("TimeoutStopSec=%q (%v), want above the stop bound %s", svc["TimeoutStopSec"], err, serveStopBound)
	}
	if u["[Install]"]["WantedBy"] == "" {
		t.Error("no WantedBy")
	}
	args := strings.Fields(svc["ExecStart"])
	if len(args) < 2 || filepath.Base(args[0]) != "cyber-supervisor" {
		t.Fatalf("ExecStart=%q", svc["ExecStart"])
	}
	if r := cli(t, append(args[1:], "--help")...); r.code != 0 || !strings.Contains(r.stdout, "Run the daemon") {
		t.Errorf("ExecStart's flags: %+v", r)
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the unit's syntax is checked above only")
	}
	// verify needs the executable to exist: a copy names the built one.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), "cyber-supervisor.service")
	if err := os.WriteFile(copyPath, []byte(strings.ReplaceAll(string(b), args[0], cliBin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", copyPath).CombinedOutput()
	if err != nil || strings.Contains(string(out), "cyber-supervisor.service") {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// A duration too long for time.Duration is said to be too long, not
// malformed; a malformed one still gets the examples.
func TestDurationMessages(t *testing.T) {
	var r retentionValue
	for _, c := range []struct{ in, want string }{
		{"100000000h", "at most"},
		{"9999999999999999999s", "at most"},
		{"1.5h99999999999m", "at most"},
		{"5hm", "not a duration"},
		{"soon", "not a duration"},
		{"h", "not a duration"},
		{"1..5h", "not a duration"},
	} {
		if err := r.Set(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("retention %q: %v, want %q", c.in, err, c.want)
		}
		if _, err := parseLimitDuration(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("limit %q: %v, want %q", c.in, err, c.want)
		}
	}
}
