package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// hangupsDefault makes the commands this test starts get SIGHUP's
// default action, whatever this process was started with: a signal this
// process handles is reset at exec, one it ignores (nohup, some CI
// runners) would stay ignored in its children and hide what a hang-up
// does to them.
func hangupsDefault(t *testing.T) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	t.Cleanup(func() { signal.Stop(ch) })
}

// A hang-up (the terminal or SSH session that ran `serve &` closed: the
// shell sends SIGHUP to the daemon's process group) does not stop the
// daemon: it logs it and goes on, and the attempt it runs goes on too
// (its worker, in a process group of its own, gets nothing). serve died
// at once (exit 129, no shutdown), its running attempt unknown at the
// next start.
func TestServeSurvivesHangup(t *testing.T) {
	requireIsolation(t)
	hangupsDefault(t)
	home := newHome(t)
	d := startDaemonWith(t, home, 1, "--log-level", "info", "--pool", "0")
	submitCLI(t, home, "hup", spinArgs(t, t.TempDir())...)
	waitRunning(t, d, "hup", 1)
	worker := attemptProcess(t, "hup-a1")
	// As the shell does at a hang-up: the whole process group.
	if err := syscall.Kill(-d.cmd.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		t.Fatalf("serve exited on SIGHUP: %v\n%s", err, d.log)
	case <-time.After(2 * time.Second):
	}
	st, err := d.client.Status(context.Background(), "hup")
	if err != nil || st.Job.State != "running" || st.Job.Attempts != 1 || !processAlive(worker) {
		t.Fatalf("after the hang-up: %+v %v (worker %d alive %v)\n%s", st, err, worker, processAlive(worker), d.log)
	}
	if !strings.Contains(d.log.String(), "SIGHUP ignored") {
		t.Errorf("the log does not say the hang-up was ignored:\n%s", d.log)
	}
	cli(t, "--home", home, "cancel", "hup")
	waitDone(t, d, "hup")
	d.stop(t)
}

// A client treats a hang-up as SIGTERM: run cancels its job through the
// protocol (exit 130, cancelled), submit --wait stops waiting and names
// the job it leaves running (exit 130, interrupted). Both died of the
// signal (status 129): run's job ran on unseen until its deadline, with
// no word on what happened.
func TestClientsTakeHangupAsSIGTERM(t *testing.T) {
	requireIsolation(t)
	hangupsDefault(t)
	home := newHome(t)
	p := startCLI(t, runArgs(home, spinArgs(t, t.TempDir())...)...)
	p.await(t, `: running \(attempt 1, `)
	p.cmd.Process.Signal(syscall.SIGHUP)
	if code := p.wait(t); code != exitCancelled || !strings.Contains(p.stderrText(), "cancelled: interrupted (signal)") {
		t.Fatalf("run on SIGHUP: exit %d\n%s", code, p.stderrText())
	}

	d := startDaemon(t, home, 1)
	defer d.stop(t)
	p = startCLI(t, append([]string{"--home", home, "submit", "--wait", "--format", "json", "--job-id", "hw"}, spinArgs(t, t.TempDir())...)...)
	waitSubmitted(t, d, "hw")
	waitRunning(t, d, "hw", 1)
	awaitHeldSocket(t, p.cmd.Process.Pid) // its long poll
	p.cmd.Process.Signal(syscall.SIGHUP)
	if code := p.wait(t); code != exitCancelled {
		t.Fatalf("submit --wait on SIGHUP: exit %d\n%s", code, p.stderrText())
	}
	var env protocol.Envelope
	if err := json.Unmarshal(p.stdout.Bytes(), &env); err != nil || env.Error == nil || env.Error.Code != "interrupted" {
		t.Fatalf("submit --wait on SIGHUP: %s (%v)", p.stdout.String(), err)
	}
	if st, err := d.client.Status(context.Background(), "hw"); err != nil || st.Job.State != "running" {
		t.Fatalf("hw after its client's hang-up: %+v %v", st, err)
	}
	cli(t, "--home", home, "cancel", "hw")
	waitDone(t, d, "hw")
}

// waitSubmitted waits until the daemon knows job id.
func waitSubmitted(t *testing.T, d *daemon, id string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := d.client.Status(context.Background(), id); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was never submitted", id)
		}
	}
}
