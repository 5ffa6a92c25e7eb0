package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// watcherErr runs a watching command on home and gives its stdout and
// stderr; the returned function interrupts it (SIGINT) and checks it
// ended with exit 0.
func watcherErr(t *testing.T, home string, args ...string) (*testenv.Buffer, *testenv.Buffer, func()) {
	t.Helper()
	cmd := exec.Command(cliBin, append([]string{"--home", home}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, errb := &testenv.Buffer{}, &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	stop := func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v ended with %v on SIGINT, want exit 0\nstdout %s\nstderr %s", args, err, out, errb)
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("%v did not end on SIGINT", args)
		}
	}
	t.Cleanup(stop)
	return out, errb, stop
}

// list --watch and events --follow --all/--state: jobs and their
// transitions as they happen, first on a home no daemon owns (a one-shot
// run adds a job), then through the daemon that starts on it; SIGINT
// ends them with exit 0.
func TestWatchEveryJob(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an end-to-end run of the built binaries and a daemon")
	}
	home := t.TempDir()
	first := resultOf(t, jsonRun(t, 0, "--home", home, "run", example("add.nox"), "--input-values", "1,1", "--isolation", "off").Result)["job_id"].(string)
	list, listErr, stopList := watcherErr(t, home, "list", "--watch")
	events, eventsErr, stopEvents := watcherErr(t, home, "events", "--follow", "--all")
	accepted, acceptedErr, stopAccepted := watcherErr(t, home, "events", "--follow", "--state", "accepted")
	// waitFor, saying what each watcher printed when it times out.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\nlist --watch:\n%s%s\nevents --follow --all:\n%s%s\nevents --follow --state accepted:\n%s%s",
					what, list, listErr, events, eventsErr, accepted, acceptedErr)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Each is ready once it has read the jobs: list --watch has printed
	// them, events --follow said so.
	waitFor("the watchers to start", func() bool {
		return strings.Contains(list.String(), first) && strings.Contains(eventsErr.String(), "following") && strings.Contains(acceptedErr.String(), "following")
	})
	// A one-shot run on the home while they watch it.
	second := resultOf(t, jsonRun(t, 0, "--home", home, "run", example("add.nox"), "--input-values", "2,2", "--isolation", "off").Result)["job_id"].(string)
	waitFor("the one-shot job in the watch", func() bool {
		return strings.Contains(list.String(), second+"  accepted") && strings.Contains(events.String(), second+" ") &&
			strings.Contains(accepted.String(), second+" ")
	})
	// A daemon starts; a job submitted to it shows as it moves.
	serveBin(t, home)
	third := resultOf(t, jsonRun(t, 0, "--home", home, "submit", example("add.nox"), "--input-values", "3,3", "--wait").Result)["job_id"].(string)
	waitFor("the daemon's job in the watch", func() bool {
		return strings.Contains(list.String(), third+"  accepted") && strings.Contains(events.String(), third+" ") &&
			strings.Contains(events.String(), "verified → accepted") && strings.Contains(accepted.String(), third+" ")
	})
	stopList()
	stopEvents()
	stopAccepted()
	ev := events.String()
	for _, want := range []string{second + " ", third + " ", "→ queued: submitted", "queued → running", "verified → accepted"} {
		if !strings.Contains(ev, want) {
			t.Errorf("events --follow --all misses %q:\n%s", want, ev)
		}
	}
	if strings.Contains(ev, first+" ") {
		t.Errorf("events --follow --all printed the history of a job that ended before it began:\n%s", ev)
	}
	for _, line := range strings.Split(strings.TrimSpace(accepted.String()), "\n") {
		if !strings.Contains(line, "accepted") {
			t.Errorf("events --follow --state accepted printed %q", line)
		}
	}
	if n := strings.Count(list.String(), third+"  accepted"); n != 1 {
		t.Errorf("list --watch printed the accepted job %d times:\n%s", n, list)
	}
}

// The watches are for terminals; their flags are checked.
func TestWatchUsage(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{{"list", "--watch", "--format", "json"}, {"events", "--follow", "--all", "--format", "json"},
		{"events", "--all"}, {"events", "--follow", "--all", "job-1"}, {"events", "--state", "running"}, {"events", "--follow", "--state", "nope"}} {
		r := cli(t, append([]string{"--home", home}, args...)...)
		if r.code != protocol.ExitUsage {
			t.Errorf("%v: exit %d, want %d: %s%s", args, r.code, protocol.ExitUsage, r.stdout, r.stderr)
		}
	}
}
