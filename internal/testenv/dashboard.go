package testenv

import (
	"bufio"
	"net/url"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// StartDashboard starts cmd, a `cyber-supervisor dashboard`, and returns
// the URL it prints first (it must carry its token). The test's end
// interrupts it (SIGINT) and expects it to exit 0 within 20 s.
func StartDashboard(t testing.TB, cmd *exec.Cmd) *url.URL {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	line, err := bufio.NewReader(out).ReadString('\n')
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the dashboard ended with %v on SIGINT, want exit 0\n%s", err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Error("the dashboard did not end on SIGINT")
		}
	})
	u, perr := url.Parse(strings.TrimSpace(line))
	if err != nil || perr != nil || u.Query().Get("token") == "" {
		t.Fatalf("the dashboard printed %q (%v, %v)\n%s", line, err, perr, stderr.String())
	}
	return u
}
