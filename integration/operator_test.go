package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// An operator's ordinary moves (issue #27): a stop, a crash's unknown
// job resolved, a drain before an upgrade. Each loses nothing that was
// accepted and repeats no effect; the store's check passes after each.

// storeCheckPasses runs `store check` on the home (through its daemon
// when one runs) and fails the test on any problem.
func storeCheckPasses(t *testing.T, home string) {
	t.Helper()
	if r := cli(t, "--home", home, "store", "check"); r.code != 0 || !strings.Contains(r.stdout, "no problems") {
		t.Fatalf("store check: %+v", r)
	}
}

// A job submitted with the defaults keeps its work across a daemon's
// stop: the attempt the stop interrupts is queued again whatever the
// retry policy, counted (interrupted) but not against the policy, and
// the next start runs it. `serve --default-retries N` gives a job that
// asks for no retries N of them. Before, the job of one attempt ended
// cancelled for good at the stop ("no attempt left"), and serve had no
// --default-retries.
func TestStopCostsNoAttempt(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	dir := t.TempDir()
	d := startDaemon(t, home, 2)
	submitCLI(t, home, "once", spinArgs(t, dir)...)
	waitRunning(t, d, "once", 1)
	d.stop(t)

	d = startDaemon(t, home, 2)
	waitRunning(t, d, "once", 2)
	env := cliJSON(t, 0, "--home", home, "status", "once")
	var view struct {
		Job struct {
			Retry struct {
				MaxAttempts string `json:"max_attempts"`
			} `json:"retry"`
			AttemptsAllowed string `json:"attempts_allowed"`
			Interrupted     string `json:"interrupted_attempts"`
		} `json:"job"`
		Attempts []struct {
			State string `json:"state"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"attempts"`
	}
	if err := json.Unmarshal(env.Result, &view); err != nil {
		t.Fatal(err)
	}
	if j := view.Job; j.Retry.MaxAttempts != "1" || j.AttemptsAllowed != "2" || j.Interrupted != "1" || len(view.Attempts) != 2 ||
		view.Attempts[0].State != "cancelled" || !strings.Contains(view.Attempts[0].Error.Message, "interrupted by the supervisor's shutdown") {
		t.Fatalf("once after the stop: %s", env.Result)
	}
	cli(t, "--home", home, "cancel", "once")
	waitDone(t, d, "once")
	d.stop(t)

	d = startDaemon(t, home, 2, "--default-retries", "2")
	// No --retries: the daemon's default, three attempts for a deadline;
	// --retries 0 asks for one, whatever the default.
	submitCLI(t, home, "deadline", append(spinArgs(t, dir), "--time", "200ms")...)
	submitCLI(t, home, "one", append(spinArgs(t, dir), "--time", "200ms", "--retries", "0")...)
	for id, n := range map[string]uint32{"deadline": 3, "one": 1} {
		st := waitDone(t, d, id)
		if st.Job.State != lifecycle.Failed || st.Job.Attempts != n || st.Job.Retry.MaxAttempts != n {
			t.Fatalf("%s with --default-retries 2: %s after %d attempts (policy %d), want %d", id, st.Job.State, st.Job.Attempts, st.Job.Retry.MaxAttempts, n)
		}
	}
	if r := cli(t, "--home", home, "capabilities"); !strings.Contains(r.stdout, "job retries   default 2") {
		t.Errorf("capabilities: %s", r.stdout)
	}
	storeCheckPasses(t, home)
	d.stop(t)
}

// A job whose attempt a crash left unknown, with no attempt left, is
// ended by its operator: `cancel` ends it cancelled (its attempt stays
// unknown) and gc then collects it; `resolve --attempt N --retry` gives it
// one more attempt, which runs to its end. A resolution names the
// attempt, the same one again is the same thing, another is refused
// (stale_state), and so is one of a job that is not unknown. Before, an
// unknown job could be neither cancelled ("had already ended"), retried
// nor collected: it stayed forever.
func TestUnknownJobResolved(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	dir := t.TempDir()
	d := startDaemon(t, home, 2)
	submitCLI(t, home, "gone", spinArgs(t, dir)...)
	submitCLI(t, home, "again", spinArgs(t, dir)...)
	waitRunning(t, d, "gone", 1)
	waitRunning(t, d, "again", 1)
	d.kill9()

	d = startDaemon(t, home, 2)
	defer d.stop(t)
	for _, id := range []string{"gone", "again"} {
		if st := waitDone(t, d, id); st.Job.State != lifecycle.Unknown || st.Attempts[0].State != lifecycle.Unknown {
			t.Fatalf("%s after the crash: %s", id, st.Job.State)
		}
	}
	r := cli(t, "--home", home, "cancel", "gone")
	if r.code != 0 || !strings.Contains(r.stdout, "gone: cancelled; attempt 1, whose outcome is unknown, stays so") {
		t.Fatalf("cancel of an unknown job: %+v", r)
	}
	cliJSON(t, 5, "--home", home, "resolve", "gone", "--attempt", "1", "--retry") // resolved the other way
	st, err := d.client.Status(context.Background(), "gone")
	if err != nil || st.Job.State != lifecycle.Cancelled || st.Attempts[0].State != lifecycle.Unknown || st.Job.Resolved == nil {
		t.Fatalf("gone after its cancel: %+v %v", st, err)
	}

	// The job's error says how to end it, naming the home.
	r = cli(t, "--home", home, "result", "again")
	if r.code != 1 || !strings.Contains(r.stderr, "`cyber-supervisor --home "+home+" resolve again --attempt 1 --retry`") {
		t.Fatalf("result of an unknown job: %+v", r)
	}
	cliJSON(t, 5, "--home", home, "resolve", "again", "--attempt", "2", "--retry") // not its attempt
	cliJSON(t, 2, "--home", home, "resolve", "again", "--attempt", "1")            // neither --retry nor --cancel
	env := cliJSON(t, 0, "--home", home, "resolve", "again", "--attempt", "1", "--retry", "--reason", "worth another go")
	if !strings.Contains(string(env.Result), `"resolved":true`) {
		t.Fatalf("resolve --retry: %s", env.Result)
	}
	env = cliJSON(t, 0, "--home", home, "resolve", "again", "--attempt", "1", "--retry") // the same again
	if !strings.Contains(string(env.Result), `"resolved":false`) {
		t.Fatalf("resolve --retry again: %s", env.Result)
	}
	cliJSON(t, 5, "--home", home, "resolve", "again", "--attempt", "1", "--cancel")
	// Its granted attempt runs (and ends as any would: here cancelled).
	waitRunning(t, d, "again", 2)
	cli(t, "--home", home, "cancel", "again")
	st = waitDone(t, d, "again")
	if st.Job.State != lifecycle.Cancelled || st.Job.Attempts != 2 || st.Job.GrantedAttempts != 1 || st.Attempts[0].State != lifecycle.Unknown ||
		st.Attempts[1].State != lifecycle.Cancelled {
		t.Fatalf("again after resolve --retry: %s, %d attempts, %d granted, %+v", st.Job.State, st.Job.Attempts, st.Job.GrantedAttempts, st.Attempts)
	}
	storeCheckPasses(t, home)

	// Both have ended now: gc collects them, and their ids stay taken.
	env = cliJSON(t, 0, "--home", home, "gc")
	if !strings.Contains(string(env.Result), `"job_id":"gone"`) || !strings.Contains(string(env.Result), `"job_id":"again"`) {
		t.Fatalf("gc after the resolutions: %s", env.Result)
	}
	if _, err := d.client.Status(context.Background(), "gone"); err == nil || !strings.Contains(err.Error(), "removed by retention") {
		t.Fatalf("gone after gc: %v", err)
	}
	storeCheckPasses(t, home)
}

// drainView is drain's --format json result.
type drainView struct {
	Ended      []string `json:"ended"`
	HandedBack []string `json:"handed_back"`
	Unsaid     []string `json:"unsaid"`
	Exited     bool     `json:"exited"`
}

// drain runs `drain` with args on home and returns its result.
func drainHome(t *testing.T, home string, args ...string) drainView {
	t.Helper()
	env := cliJSON(t, 0, append([]string{"--home", home, "drain"}, args...)...)
	var v drainView
	if err := json.Unmarshal(env.Result, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// drain stops the daemon taking jobs, lets the running ones end up to its
// deadline, hands back those still running then (queued again, not
// counted against their policy), and the daemon exits 0; jobs queued
// meanwhile keep waiting with all their attempts. drain waits for the
// exit and says what ended and what was handed back. There was no drain:
// an upgrade's stop interrupted every running attempt, and a job of one
// attempt ended cancelled.
func TestDrain(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	dir := t.TempDir()
	d := startDaemon(t, home, 2)
	submitCLI(t, home, "short", spinArgs(t, dir)...)
	submitCLI(t, home, "long", spinArgs(t, dir)...)
	waitRunning(t, d, "short", 1)
	waitRunning(t, d, "long", 1)
	p := startCLI(t, "--home", home, "drain", "--format", "json")
	awaitHeldSocket(t, p.cmd.Process.Pid) // its long poll: the drain has begun
	// Taken, not run: a free slot takes nothing from the queue any more.
	submitCLI(t, home, "waiting", writeProgram(t, dir, "add.nox", "[5 [[0 2] [0 6]]]"), "--input-values", "3,5")
	// One attempt ends on its own during the drain (here cancelled).
	cli(t, "--home", home, "cancel", "short")
	waitDone(t, d, "short")
	// A drain with an earlier deadline brings the first one's forward.
	cliJSON(t, 0, "--home", home, "drain", "--timeout", "0s", "--no-wait")
	if code := p.wait(t); code != 0 {
		t.Fatalf("drain: exit %d\n%s\n%s", code, p.stdout.String(), p.stderrText())
	}
	var env struct {
		Result drainView `json:"result"`
	}
	if err := json.Unmarshal(p.stdout.Bytes(), &env); err != nil {
		t.Fatalf("drain: %s: %v", p.stdout.String(), err)
	}
	if v := env.Result; strings.Join(v.Ended, " ") != "short" || strings.Join(v.HandedBack, " ") != "long" || len(v.Unsaid) != 0 || !v.Exited {
		t.Fatalf("drain: %+v\n%s", v, d.log)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("the drained daemon exited: %v\n%s", err, d.log)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the drained daemon did not exit\n%s", d.log)
	}
	off, err := supervisor.OpenOffline(context.Background(), home, nil)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"short": "cancelled 1/0", "long": "queued 1/1", "waiting": "queued 0/0"} {
		st, err := off.Status(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%s %d/%d", st.Job.State, st.Job.Attempts, st.Job.Interrupted); got != want {
			t.Errorf("%s after the drain: %s (attempts/interrupted), want %s", id, got, want)
		}
	}
	off.Close(context.Background())

	// The next start runs what was handed back and what waited.
	d = startDaemon(t, home, 2)
	if st := waitDone(t, d, "waiting"); st.Job.State != lifecycle.Accepted {
		t.Fatalf("waiting after the restart: %s", st.Job.State)
	}
	waitRunning(t, d, "long", 2)
	// A drain of 0 s hands back at once; the answer names it.
	if v := drainHome(t, home, "--timeout", "0s"); strings.Join(v.HandedBack, " ") != "long" || !v.Exited {
		t.Fatalf("drain --timeout 0s: %+v", v)
	}
	<-d.done
	d = startDaemon(t, home, 2)
	defer d.stop(t)
	waitRunning(t, d, "long", 3)
	cli(t, "--home", home, "cancel", "long")
	waitDone(t, d, "long")
	storeCheckPasses(t, home)
}
