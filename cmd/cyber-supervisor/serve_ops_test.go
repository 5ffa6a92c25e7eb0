package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
)

// logRecord finds the first JSON log record with msg in log.
func logRecord(log, msg string) map[string]any {
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			return m
		}
	}
	return nil
}

// servingDaemon is a serve process of the built binary.
type servingDaemon struct {
	cmd  *exec.Cmd
	log  *testenv.Buffer
	done chan struct{}
}

// startServe starts the binary with args (which must ask for JSON logs:
// ready reads them) and env beside PATH; it is stopped (SIGTERM) at the
// test's end.
func startServe(t *testing.T, env []string, args ...string) *servingDaemon {
	t.Helper()
	cmd := exec.Command(cliBin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	d := &servingDaemon{cmd: cmd, log: &testenv.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = d.log, d.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

// ready waits for the daemon's "supervisor ready" line and returns it.
func (d *servingDaemon) ready(t *testing.T) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if m := logRecord(d.log.String(), "supervisor ready"); m != nil {
			return m
		}
		select {
		case <-d.done:
			t.Fatalf("serve exited:\n%s", d.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up:\n%s", d.log.String())
		}
	}
}

// stop sends SIGTERM and waits for the exit status.
func (d *servingDaemon) stop(t *testing.T) int {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		t.Fatalf("serve did not stop:\n%s", d.log.String())
	}
	return d.cmd.ProcessState.ExitCode()
}
