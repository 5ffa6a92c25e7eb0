package integration

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
)

// TestServeStopDispatchesNothingDuringTheDrain: once serve is asked to
// stop, no attempt is dispatched, also while its API drains (up to 5 s
// for a request in progress): a slot that frees then leaves the next job
// queued for the next start, with all its attempts. The scheduler ran on
// until the drain had ended, and the attempt it dispatched then was
// interrupted by the shutdown that followed: the job paid its only
// attempt for a few seconds' run and ended cancelled.
func TestServeStopDispatchesNothingDuringTheDrain(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1, "--pool", "0", "--api-header-timeout", "1m")
	dir := t.TempDir()
	submitCLI(t, home, "busy", spinArgs(t, dir)...)
	waitRunning(t, d, "busy", 1)
	submitCLI(t, home, "next", spinArgs(t, dir)...)
	worker := attemptProcess(t, "busy-a1")

	// A request in progress holds the drain: its headers are not done.
	c, err := net.Dial("unix", supervisor.SocketPath(home))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /v1/jobs HTTP/1.1\r\nHost: supervisor\r\n")); err != nil {
		t.Fatal(err)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	// The listener closes as the drain begins.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		probe, err := net.Dial("unix", supervisor.SocketPath(home))
		if err != nil {
			break
		}
		probe.Close()
		if time.Now().After(deadline) {
			t.Fatal("the API did not stop listening")
		}
	}
	// The running attempt ends in the drain: its worker dies.
	syscall.Kill(worker, syscall.SIGKILL)
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		t.Fatalf("the daemon did not stop\n%s", d.log)
	}
	off, err := supervisor.OpenOffline(context.Background(), home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close(context.Background())
	st, err := off.Status(context.Background(), "next")
	if err != nil {
		t.Fatal(err)
	}
	if st.Job.State != "queued" || len(st.Attempts) != 0 {
		t.Fatalf("next: %s with %d attempt(s), want queued with none\n%s", st.Job.State, len(st.Attempts), d.log)
	}
}

// attemptProcess is the pid of the process in the attempt's cgroup (the
// group named group, without a warm pool: its worker's own).
func attemptProcess(t *testing.T, group string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "/"+group+"\n") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			return pid
		}
	}
	t.Fatalf("no process in cgroup %s", group)
	return 0
}
