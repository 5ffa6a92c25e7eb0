package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// The CLI as an operator uses it: the built cyber-supervisor against a
// real home, a real daemon, real workers.

type cliResult struct {
	stdout, stderr string
	code           int
}

// cli runs cyber-supervisor with args and returns what it printed.
func cli(t testing.TB, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, errb, code, err := testbin.Capture(exec.CommandContext(ctx, supervisorBin, args...))
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return cliResult{out, errb, code}
}

// submitCLI submits a job with id through the home's daemon (`submit
// --job-id id args...`) and fails the test unless that succeeds.
func submitCLI(t testing.TB, home, id string, args ...string) {
	t.Helper()
	if r := cli(t, append([]string{"--home", home, "submit", "--job-id", id}, args...)...); r.code != 0 {
		t.Fatalf("submit %s: %+v", id, r)
	}
}

// cliJSON runs args with --format json, checks the exit status and that
// stdout is one envelope, and returns it.
func cliJSON(t testing.TB, want int, args ...string) protocol.Envelope {
	t.Helper()
	r := cli(t, append(args, "--format", "json")...)
	var env protocol.Envelope
	if err := json.Unmarshal([]byte(r.stdout), &env); err != nil || env.Schema != protocol.EnvelopeSchema || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("%v: not one envelope: %q (%v)\n%s", args, r.stdout, err, r.stderr)
	}
	if r.code != want {
		t.Fatalf("%v: exit %d, want %d: %+v\n%s", args, r.code, want, env.Error, r.stderr)
	}
	return env
}

// runArgs are the flags of a one-shot run in this test process's cgroup.
func runArgs(home string, args ...string) []string {
	return append([]string{"--home", home, "run", "--worker", workerBin, "--isolation", "required", "--cgroup-name", cgroupName}, args...)
}

// cliProc is a cyber-supervisor command left running, its stderr read
// line by line.
type cliProc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr []string
	lines  chan string
	done   chan struct{}
}

func startCLI(t *testing.T, args ...string) *cliProc {
	t.Helper()
	p := &cliProc{cmd: exec.Command(supervisorBin, args...), lines: make(chan string, 1024), done: make(chan struct{})}
	p.cmd.Stdout = &p.stdout
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr = append(p.stderr, sc.Text())
			p.mu.Unlock()
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	return p
}

// await waits for a stderr line matching re.
func (p *cliProc) await(t *testing.T, re string) {
	t.Helper()
	m := regexp.MustCompile(re)
	deadline := time.After(time.Minute)
	for {
		select {
		case l := <-p.lines:
			if m.MatchString(l) {
				return
			}
		case <-deadline:
			t.Fatalf("no line matching %q in %q", re, p.stderrText())
		}
	}
}

func (p *cliProc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.stderr, "\n")
}

// wait ends the command's wait and returns its exit status.
func (p *cliProc) wait(t *testing.T) int {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- p.cmd.Wait() }()
	select {
	case err := <-errc:
		<-p.done
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(time.Minute):
		t.Fatalf("still running\n%s", p.stderrText())
		return -1
	}
}

// spinArgs is a job that runs until it is stopped.
func spinArgs(t *testing.T, dir string) []string {
	return []string{writeProgram(t, dir, "spin.nox", program(t, "spin.nox")), "--input-values", "60", "--budget", "1152921504606846976"}
}

// Ctrl-C or SIGTERM on run cancels the job through the protocol and exits
// 130 with cancelled; nothing of the worker is left (newHome).
func TestRunSignalCancels(t *testing.T) {
	requireIsolation(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		home := newHome(t)
		p := startCLI(t, runArgs(home, spinArgs(t, t.TempDir())...)...)
		p.await(t, `: running \(attempt 1, `)
		start := time.Now()
		p.cmd.Process.Signal(sig)
		if code := p.wait(t); code != exitCancelled {
			t.Fatalf("%v: exit %d\n%s", sig, code, p.stderrText())
		}
		if !strings.Contains(p.stderrText(), "cancelled: interrupted (signal)") || strings.Contains(p.stderrText(), "cancelled: cancelled") {
			t.Errorf("%v: %s", sig, p.stderrText())
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("%v: took %s to stop", sig, took)
		}
	}
}

const exitCancelled = 130

// submit --wait: a signal stops the wait, says the job keeps running and
// how to cancel it, exit 130; the job runs on.
func TestSubmitWaitSignalLeavesTheJob(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	defer d.stop(t)
	p := startCLI(t, append([]string{"--home", home, "submit", "--wait", "--job-id", "sw"}, spinArgs(t, t.TempDir())...)...)
	p.await(t, `^sw: running`)
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != exitCancelled {
		t.Fatalf("exit %d\n%s", code, p.stderrText())
	}
	msg := p.stderrText()
	hint := regexp.MustCompile("`cyber-supervisor ([^`]+)`").FindStringSubmatch(msg)
	if !strings.Contains(msg, "job sw keeps running") || hint == nil {
		t.Fatalf("stderr: %s", msg)
	}
	st, err := d.client.Status(context.Background(), "sw")
	if err != nil || st.Job.State != "running" {
		t.Fatalf("after the wait stopped: %+v %v", st, err)
	}
	// The command it suggests cancels the job: it names the home the
	// submission was given (the default home has no daemon here).
	if want := "--home " + home + " cancel sw"; hint[1] != want {
		t.Fatalf("suggested %q, want %q", hint[1], want)
	}
	if r := cli(t, strings.Fields(hint[1])...); r.code != 0 {
		t.Fatalf("the suggested cancel: %+v", r)
	}
	if st := waitDone(t, d, "sw"); st.Job.State != "cancelled" {
		t.Fatalf("after the suggested cancel: %s", st.Job.State)
	}
}

// A signal while the submission is on its way to the daemon (here: the
// daemon stopped with SIGSTOP, so the request waits in its socket) does
// not abandon it: the daemon stores the job once it runs again, and run
// then cancels it (exit 130), submit --wait says it keeps running (exit
// 130), submit prints its id (both leave it queued or running). Abandoned, the job ran on unseen while the
// client said there was no daemon (exit 4).
func TestSignalDuringSubmission(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 2)
	defer d.stop(t)
	spin := spinArgs(t, t.TempDir())
	for _, c := range []struct {
		id    string
		args  []string
		code  int
		state string
	}{
		// Not runArgs: its --isolation required makes run ask the daemon
		// what it enforces first (TestRunThroughTheDaemonSaysWhatItIgnores),
		// and the held socket would be that request, not the submission.
		{"sig-run", append([]string{"--home", home, "run"}, spin...), exitCancelled, "cancelled"},
		// With --isolation required the signal comes while run asks the
		// daemon what it enforces: nothing was submitted.
		{"sig-required", runArgs(home, spin...), exitCancelled, "none"},
		{"sig-wait", append([]string{"--home", home, "submit", "--wait"}, spin...), exitCancelled, "live"},
		{"sig-submit", append([]string{"--home", home, "submit"}, spin...), 0, "live"},
	} {
		d.cmd.Process.Signal(syscall.SIGSTOP)
		p := startCLI(t, append(c.args, "--job-id", c.id)...)
		awaitHeldSocket(t, p.cmd.Process.Pid)
		p.cmd.Process.Signal(syscall.SIGINT)
		time.Sleep(100 * time.Millisecond) // the signal is handled while the daemon is stopped, or not at all
		d.cmd.Process.Signal(syscall.SIGCONT)
		if code := p.wait(t); code != c.code || strings.Contains(p.stderrText(), "unavailable") {
			t.Fatalf("%s: exit %d, want %d\n%s", c.id, code, c.code, p.stderrText())
		}
		st, err := d.client.Status(context.Background(), c.id)
		if c.state == "none" {
			if err == nil || !strings.Contains(p.stderrText(), "nothing was started") {
				t.Fatalf("%s: submitted (%v), or said otherwise:\n%s", c.id, err, p.stderrText())
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		if c.state == "cancelled" {
			st = waitDone(t, d, c.id)
		}
		if live := !st.Job.State.Terminal(); live != (c.state == "live") || !live && string(st.Job.State) != c.state {
			t.Fatalf("%s: %s, want %s", c.id, st.Job.State, c.state)
		}
		if c.id == "sig-submit" && strings.TrimSpace(p.stdout.String()) != c.id {
			t.Errorf("submit printed %q", p.stdout.String())
		}
		if c.state == "live" {
			cli(t, "--home", home, "cancel", c.id)
			waitDone(t, d, c.id)
		}
	}
}

// awaitHeldSocket waits until process pid holds a socket open for a
// while: its request to the stopped daemon (the check that a daemon
// listens opens one and closes it at once).
func awaitHeldSocket(t *testing.T, pid int) {
	t.Helper()
	held := 0
	for deadline := time.Now().Add(time.Minute); held < 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command never connected to the daemon")
		}
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		sock := false
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:") {
				sock = true
			}
		}
		if sock {
			held++
		} else {
			held = 0
		}
	}
}

// A run whose stdout and stderr are a pipe nobody reads any more (`run
// ... 2>&1 | head -1`) is not killed by SIGPIPE at its first progress
// line: its writes fail, the job runs to its end (here its 1 s
// deadline) and is recorded, and nothing of its worker is left
// (newHome's leak check).
func TestRunWithAClosedPipe(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd := exec.Command(supervisorBin, runArgs(home, append(spinArgs(t, t.TempDir()), "--time", "1s", "--job-id", "p")...)...)
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	w.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("run with a closed pipe: %v (%s)", err, cmd.ProcessState)
	}
	d := startDaemon(t, home, 1)
	defer d.stop(t)
	st, err := d.client.Status(context.Background(), "p")
	if err != nil || st.Job.State != "failed" || st.Job.Error == nil || st.Job.Error.Code != protocol.CodeDeadlineExceeded {
		t.Fatalf("the job after a run with a closed pipe: %+v %v", st, err)
	}
}

// A client long-polling the daemon (submit --wait) does not hold up the
// daemon's stop: the API ends its long polls when its shutdown begins,
// instead of draining them for up to apiDrain (5 s) before the running
// attempts are even interrupted. The client then says the daemon went
// and that the job is not lost, exit 4.
func TestServeStopWithAWaitingClient(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	p := startCLI(t, append([]string{"--home", home, "submit", "--wait", "--job-id", "w", "--retries", "1"}, spinArgs(t, t.TempDir())...)...)
	p.await(t, `: running \(attempt 1 of 2, `)
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the daemon did not stop\n%s", d.log)
	}
	// The bound rules out the drain's wait (5 s, then the attempt's own
	// interruption); the stop itself takes well under a second here.
	if took := time.Since(start); took >= 5*time.Second {
		t.Errorf("the stop took %s with a client waiting", took)
	}
	if code := p.wait(t); code != 4 || !strings.Contains(p.stderrText(), "stopped answering while this command followed job w") ||
		!strings.Contains(p.stderrText(), "start `cyber-supervisor --home "+home+" serve`, then see `cyber-supervisor --home "+home+" status w`") {
		t.Errorf("the waiting client: exit %d\n%s", code, p.stderrText())
	}
	d = startDaemon(t, home, 1)
	waitRunning(t, d, "w", 2)
	cli(t, "--home", home, "cancel", "w")
	waitDone(t, d, "w")
	d.stop(t)
}

// SIGTERM on serve interrupts running attempts; their jobs are queued for
// the next start whatever their retry policy (a job of one attempt too:
// the interrupted attempt is not counted against it), and the next start
// says what its recovery did. The job of one attempt used to end
// cancelled: a stop cost it its only attempt.
func TestServeSIGTERMRequeues(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 2)
	dir := t.TempDir()
	for _, c := range []struct {
		id    string
		extra []string
	}{{"again", []string{"--retries", "1"}}, {"once", nil}} {
		args := append([]string{"--home", home, "submit", "--job-id", c.id}, append(spinArgs(t, dir), c.extra...)...)
		if r := cli(t, args...); r.code != 0 {
			t.Fatalf("submit %s: %+v", c.id, r)
		}
	}
	for _, id := range []string{"again", "once"} {
		waitRunning(t, d, id, 0)
	}
	d.stop(t)
	d = startDaemonWith(t, home, 2, "--log-level", "info", "--log-format", "json")
	waitRunning(t, d, "once", 2)
	st, err := d.client.Status(context.Background(), "once")
	if err != nil || st.Job.InterruptedAttempts != 1 || st.Attempts[0].Error == nil || !strings.Contains(st.Attempts[0].Error.Message, "interrupted by the supervisor's shutdown") {
		t.Fatalf("once: %+v %v", st, err)
	}
	cli(t, "--home", home, "cancel", "once")
	waitDone(t, d, "once")
	ev := cliJSON(t, 0, "--home", home, "events", "again")
	if !strings.Contains(string(ev.Result), "queued for the next start or another host (attempt 2 of 3") {
		t.Fatalf("again's events: %s", ev.Result)
	}
	waitRunning(t, d, "again", 2)
	cli(t, "--home", home, "cancel", "again")
	waitDone(t, d, "again")
	d.stop(t)
	// The log is JSON lines (--log-format json), and says what recovery did.
	var recovered map[string]any
	for _, line := range strings.Split(strings.TrimSpace(d.log.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if rec["msg"] == "recovered the previous boot" {
			recovered = rec
		}
	}
	if recovered == nil || recovered["still_queued"] != float64(2) {
		t.Fatalf("recovery log %v\n%s", recovered, d.log)
	}
}

// run while a daemon owns the home goes through the daemon, with the
// same output; a certificate's path is absolute and real.
func TestRunThroughTheDaemon(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	defer d.stop(t)
	prog := writeProgram(t, t.TempDir(), "add.nox", "[5 [[0 2] [0 6]]]")
	r := cli(t, runArgs(home, prog, "--op", "prove", "--input-values", "3,5", "--job-id", "via")...)
	if r.code != 0 || r.stdout != "8\n" || !strings.Contains(r.stderr, "certificate /") {
		t.Fatalf("run through the daemon: %+v", r)
	}
	path := regexp.MustCompile(`certificate (/\S+)`).FindStringSubmatch(r.stderr)[1]
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("certificate %s: %v", path, err)
	}
	if _, err := d.client.Status(context.Background(), "via"); err != nil {
		t.Fatalf("the daemon does not know the job: %v", err)
	}
	env := cliJSON(t, 0, runArgs(home, prog, "--op", "prove", "--input-values", "4,5")...)
	var res struct {
		ArtifactPath string `json:"certificate_path"`
		Output       []string
	}
	if err := json.Unmarshal(env.Result, &res); err != nil || !filepath.IsAbs(res.ArtifactPath) || len(res.Output) != 1 || res.Output[0] != "9" {
		t.Fatalf("result %s: %v", env.Result, err)
	}
	if _, err := os.Stat(res.ArtifactPath); err != nil {
		t.Fatal(err)
	}
	// result of the same job, through the daemon, names the same file.
	env = cliJSON(t, 0, "--home", home, "result", "via")
	if !strings.Contains(string(env.Result), `"certificate_path":"`+path+`"`) {
		t.Fatalf("result: %s", env.Result)
	}
}

// run's own settings do not reach a daemon that takes its job: given,
// they are said not to apply, and --isolation required is refused before
// the job is submitted when the daemon's workers are not jailed.
func TestRunThroughTheDaemonSaysWhatItIgnores(t *testing.T) {
	requireIsolation(t)
	prog := writeProgram(t, t.TempDir(), "add.nox", "[5 [[0 2] [0 6]]]")
	home := newHome(t)
	d := startDaemon(t, home, 1)
	r := cli(t, runArgs(home, prog, "--input-values", "3,5", "--max-time", "1s", "--job-id", "ignored")...)
	if r.code != 0 || r.stdout != "8\n" || !strings.Contains(r.stderr, "runs the job with its own settings, so these are ignored: --worker, --cgroup-name, --max-time") {
		t.Fatalf("run through an isolated daemon: %+v", r)
	}
	d.stop(t)

	// A daemon without the jail: required isolation is refused, exit 3,
	// and nothing is submitted.
	home = newHome(t)
	d = startDaemon(t, home, 1, "--isolation", "off")
	defer d.stop(t)
	env := cliJSON(t, 3, runArgs(home, prog, "--input-values", "3,5", "--job-id", "refused")...)
	if env.Error == nil || env.Error.Code != protocol.CodeUnsupportedLimit || !strings.Contains(env.Error.Message, "runs its workers without the jail") {
		t.Fatalf("required isolation through an unjailed daemon: %+v", env.Error)
	}
	if _, err := d.client.Status(context.Background(), "refused"); err == nil {
		t.Fatal("the refused job was submitted")
	}
	// Without --isolation required the same daemon runs it.
	r = cli(t, "--home", home, "run", prog, "--input-values", "3,5")
	if r.code != 0 || r.stdout != "8\n" || strings.Contains(r.stderr, "are ignored") {
		t.Fatalf("run without own settings: %+v", r)
	}
}

// run and submit --wait number the attempts of a job the same way.
func TestProgressIsTheSameBothWays(t *testing.T) {
	requireIsolation(t)
	spin := spinArgs(t, t.TempDir())
	flags := append(spin, "--time", "300ms", "--retries", "1", "--job-id", "p")
	norm := func(stderr string) []string {
		var out []string
		for _, l := range strings.Split(stderr, "\n") {
			if strings.HasPrefix(l, "p: ") {
				out = append(out, regexp.MustCompile(`[0-9]+\.[0-9]{2}s`).ReplaceAllString(l, "T"))
			}
		}
		return out
	}
	one := cli(t, runArgs(newHome(t), flags...)...)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	defer d.stop(t)
	two := cli(t, append([]string{"--home", home, "submit", "--wait"}, flags...)...)
	a, b := norm(one.stderr), norm(two.stderr)
	want := []string{
		"p: queued (attempt 1 of 2, T)",
		"p: running (attempt 1 of 2, T)",
		"p: attempt 1 failed (deadline_exceeded: wall-clock limit of 300 ms exceeded); queued for attempt 2 of 2 (T)",
		"p: running (attempt 2 of 2, T)",
		"p: failed (attempt 2 of 2, T)",
	}
	if strings.Join(a, "\n") != strings.Join(want, "\n") || strings.Join(b, "\n") != strings.Join(want, "\n") {
		t.Fatalf("run:\n%s\nsubmit --wait:\n%s\nwant:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"), strings.Join(want, "\n"))
	}
	if one.code != 1 || two.code != 1 {
		t.Errorf("exits %d %d", one.code, two.code)
	}
}

// A one-shot run on a home whose daemon is down runs its own job only:
// the jobs the daemon left queued stay queued, untouched, for its next
// start. A run that took one held its user until that job ended (forever,
// for this one) and would interrupt it at exit, costing it an attempt.
func TestRunLeavesTheDaemonsQueue(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	spin := spinArgs(t, t.TempDir())
	for _, job := range [][]string{{"--job-id", "busy"}, {"--job-id", "waiting", "--priority", "3"}} {
		if r := cli(t, append(append([]string{"--home", home, "submit"}, spin...), job...)...); r.code != 0 {
			t.Fatalf("submit: %+v", r)
		}
	}
	waitRunning(t, d, "busy", 0)
	d.kill9()
	prog := writeProgram(t, t.TempDir(), "add.nox", "[5 [[0 2] [0 6]]]")
	if r := cli(t, runArgs(home, prog, "--input-values", "3,5")...); r.code != 0 || r.stdout != "8\n" {
		t.Fatalf("run: %+v", r)
	}
	ran := time.Now()
	// The next daemon may dispatch it at once: an attempt made before
	// it started was the run's.
	d = startDaemon(t, home, 1)
	defer d.stop(t)
	st, err := d.client.Status(context.Background(), "waiting")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Attempts {
		if a.Created.Before(ran) {
			t.Errorf("the run dispatched the daemon's queued job: attempt %d %s, made %s", a.N, a.State, a.Created)
		}
	}
	for _, id := range []string{"busy", "waiting"} {
		cli(t, "--home", home, "cancel", id)
		waitDone(t, d, id)
	}
}
