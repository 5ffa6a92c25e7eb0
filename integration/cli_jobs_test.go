package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
)

// gc removes ended jobs and their sandboxes (through the daemon, and on
// the store when none runs), shows what it removed, keeps tombstones.
func TestGCCommand(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	prog := writeProgram(t, t.TempDir(), "add.nox", "[5 [[0 2] [0 6]]]")
	if r := cli(t, runArgs(home, prog, "--op", "prove", "--input-values", "3,5", "--job-id", "old")...); r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	sandbox := filepath.Join(home, "sandboxes", "old")
	if _, err := os.Stat(sandbox); err != nil {
		t.Fatalf("the accepted certificate's sandbox: %v", err)
	}
	d := startDaemon(t, home, 1)
	if env := cliJSON(t, 0, "--home", home, "gc", "--older-than", "1h"); !strings.Contains(string(env.Result), `"removed":[]`) {
		t.Fatalf("gc --older-than 1h: %s", env.Result)
	}
	r := cli(t, "--home", home, "gc", "--state", "accepted")
	if r.code != 0 || !strings.Contains(r.stdout, "removed 1 job(s)") || !strings.Contains(r.stdout, "old") || !strings.Contains(r.stdout, "accepted") {
		t.Fatalf("gc: %+v", r)
	}
	if _, err := os.Stat(sandbox); !os.IsNotExist(err) {
		t.Fatalf("the removed job's sandbox: %v", err)
	}
	// Its id is never used again.
	env := cliJSON(t, 2, runArgs(home, prog, "--op", "prove", "--input-values", "3,5", "--job-id", "old")...)
	if env.Error.Code != protocol.CodeInvalidJob || !strings.Contains(env.Error.Message, "removed by retention") {
		t.Fatalf("resubmitted: %+v", env.Error)
	}
	if env := cliJSON(t, 2, "--home", home, "status", "old"); env.Error.Code != "unknown_job" {
		t.Fatalf("status of a removed job: %+v", env.Error)
	}
	d.stop(t)
	// No daemon: gc opens the store itself.
	if r := cli(t, runArgs(home, prog, "--input-values", "1,1", "--job-id", "offline")...); r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	env = cliJSON(t, 0, "--home", home, "gc")
	var rep struct {
		Removed []struct {
			ID    string `json:"job_id"`
			State string `json:"state"`
		} `json:"removed"`
	}
	if err := json.Unmarshal(env.Result, &rep); err != nil || len(rep.Removed) != 1 || rep.Removed[0].ID != "offline" {
		t.Fatalf("offline gc: %s %v", env.Result, err)
	}
	if r := cli(t, "--home", home, "gc", "--state", "unknown"); r.code != 2 {
		t.Fatalf("gc --state unknown: %+v", r)
	}
}

// Collections that run at once on one daemon (several gc commands, or
// one and the daemon's retention) each succeed, and every ended job is
// removed by exactly one of them. Before they took turns, a collection
// that had listed a job another removed meanwhile failed its whole batch
// with internal_error ("remove job: ... not found").
func TestConcurrentGC(t *testing.T) {
	requireIsolation(t)
	home := parallelHome(t)
	d := startDaemon(t, home, 2)
	defer d.stop(t)
	const jobs, collectors = 300, 4
	ctx := context.Background()
	type job struct {
		id   string
		spec []byte
	}
	queue := make(chan job)
	errs := make(chan error, jobs)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				if _, err := d.client.Submit(ctx, j.spec, 0, nil); err != nil {
					errs <- fmt.Errorf("submit %s: %w", j.id, err)
					continue
				}
				if _, err := d.client.WaitEnd(ctx, j.id); err != nil {
					errs <- fmt.Errorf("wait %s: %w", j.id, err)
				}
			}
		}()
	}
	// The specs are made here: jobSpec may fail the test, which only the
	// test's goroutine may do.
	for i := range jobs {
		id := fmt.Sprintf("gc-%03d", i)
		queue <- job{id, jobSpec(t, id, protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{1, 2}, protocol.Limits{})}
	}
	close(queue)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	type report struct {
		Removed []struct {
			ID string `json:"job_id"`
		} `json:"removed"`
	}
	var gcs []*cliProc
	for range collectors {
		gcs = append(gcs, startCLI(t, "--home", home, "gc", "--format", "json"))
	}
	removed := map[string]int{}
	for i, p := range gcs {
		code := p.wait(t)
		var env protocol.Envelope
		var rep report
		if jerr := json.Unmarshal(p.stdout.Bytes(), &env); jerr != nil || code != 0 || !env.OK || json.Unmarshal(env.Result, &rep) != nil {
			t.Errorf("gc %d of %d at once: exit %d %s", i+1, collectors, code, p.stdout.Bytes())
			continue
		}
		for _, r := range rep.Removed {
			removed[r.ID]++
		}
	}
	if t.Failed() {
		t.Logf("daemon log:\n%s", d.log)
		t.FailNow()
	}
	if len(removed) != jobs {
		t.Errorf("%d jobs removed, want %d", len(removed), jobs)
	}
	for id, n := range removed {
		if n != 1 {
			t.Errorf("%s reported removed by %d collections", id, n)
		}
	}
}

// serve --retain removes what ended past the retention.
func TestServeRetain(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	prog := writeProgram(t, t.TempDir(), "add.nox", "[5 [[0 2] [0 6]]]")
	if r := cli(t, runArgs(home, prog, "--input-values", "1,2", "--job-id", "r1")...); r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	time.Sleep(1100 * time.Millisecond) // older than the retention below
	d := startDaemonWith(t, home, 1, "--retain", "1s")
	defer d.stop(t)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := d.client.Status(context.Background(), "r1"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("serve --retain did not remove the job")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// events --follow prints each event as it comes and ends with the job;
// list is in submission order, --limit keeps the newest; status shows the
// output, reductions, timing and the certificate; result of a job that
// has not ended is not_finished, exit 4.
func TestEventsListStatusResult(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 2)
	defer d.stop(t)
	dir := t.TempDir()
	spin := spinArgs(t, dir)
	submitCLI(t, home, "z-spin", append([]string{"--time", "1500ms"}, spin...)...)
	p := startCLI(t, "--home", home, "events", "--follow", "z-spin")
	if env := cliJSON(t, 4, "--home", home, "result", "z-spin"); env.Error.Code != "not_finished" || !env.Error.Retryable {
		t.Fatalf("result of a running job: %+v", env.Error)
	}
	// The follow ends with the job (which failed: the command did not).
	if code := p.wait(t); code != 0 {
		t.Fatalf("events --follow: exit %d", code)
	}
	out := p.stdout.String()
	for _, want := range []string{"→ queued: submitted", "attempt prepared", "worker launched", "deadline_exceeded"} {
		if !strings.Contains(out, want) {
			t.Errorf("events --follow lacks %q:\n%s", want, out)
		}
	}
	prog := writeProgram(t, dir, "add.nox", "[5 [[0 2] [0 6]]]")
	for _, id := range []string{"m-1", "a-2"} {
		if r := cli(t, "--home", home, "submit", prog, "--op", "prove", "--input-values", "3,5", "--job-id", id, "--wait"); r.code != 0 {
			t.Fatalf("submit %s: %+v", id, r)
		}
	}
	env := cliJSON(t, 0, "--home", home, "list", "--limit", "2")
	var rows []struct {
		ID       string `json:"job_id"`
		Attempts string `json:"attempts"`
	}
	if err := json.Unmarshal(env.Result, &rows); err != nil || len(rows) != 2 || rows[0].ID != "m-1" || rows[1].ID != "a-2" || rows[0].Attempts != "1" {
		t.Fatalf("list --limit 2: %s %v", env.Result, err)
	}
	if strings.Contains(string(env.Result), "0001-01-01") {
		t.Errorf("a zero time in %s", env.Result)
	}
	r := cli(t, "--home", home, "status", "a-2")
	for _, want := range []string{"job a-2: accepted", "output     8", "reductions 3 of a budget of 1000000", "certificate /", "attempt 1: accepted (ran ", "cpu "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	// Every number of an envelope is a string.
	for _, args := range [][]string{{"status", "a-2"}, {"events", "a-2"}, {"list"}, {"capabilities"}} {
		env := cliJSON(t, 0, append([]string{"--home", home}, args...)...)
		if n := jsonNumbers(t, env.Result); len(n) > 0 {
			t.Errorf("%v: JSON numbers %v in %s", args, n, env.Result)
		}
	}
}

// jsonNumbers lists the number tokens of a JSON document.
func jsonNumbers(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if n, ok := tok.(json.Number); ok {
			out = append(out, n.String())
		}
	}
}

// Operator limits (#11.5): a job above a ceiling is unsupported_limit,
// exit 3; one below what a worker needs invalid_job naming the minimum,
// exit 2, before anything is stored; a job that asks for none gets the
// default time; capabilities show them.
func TestOperatorLimitsCLI(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	prog := writeProgram(t, t.TempDir(), "add.nox", "[5 [[0 2] [0 6]]]")
	env := cliJSON(t, 3, runArgs(home, prog, "--max-memory", "64MiB", "--memory", "128MiB")...)
	if env.Error.Code != protocol.CodeUnsupportedLimit || !strings.Contains(env.Error.Message, "--max-memory") {
		t.Fatalf("above --max-memory: %+v", env.Error)
	}
	env = cliJSON(t, 3, runArgs(home, prog, "--max-time", "1s", "--time", "2s")...)
	if env.Error.Code != protocol.CodeUnsupportedLimit {
		t.Fatalf("above --max-time: %+v", env.Error)
	}
	env = cliJSON(t, 2, runArgs(home, prog, "--memory", "4KiB")...)
	if env.Error.Code != protocol.CodeInvalidJob || !strings.Contains(env.Error.Message, "8 MiB") {
		t.Fatalf("--memory 4KiB: %+v", env.Error)
	}
	if r := cli(t, runArgs(home, prog, "--default-memory", "4MiB")...); r.code != 2 {
		t.Fatalf("--default-memory 4MiB: %+v", r)
	}
	// The spin job gets the default memory, the ceiling: half the host's.
	// It holds almost nothing however long it spins, so only the 1 s
	// deadline ends it.
	ceiling := supervisor.HostMemory() / 2 &^ (1<<20 - 1)
	d := startDaemonWith(t, home, 1, "--default-time", "1s", "--max-memory", strconv.FormatUint(ceiling>>20, 10)+"MiB")
	defer d.stop(t)
	jobs, _ := d.client.List(context.Background(), "")
	if len(jobs) != 0 {
		t.Fatalf("refused jobs were stored: %d", len(jobs))
	}
	env = cliJSON(t, 1, append([]string{"--home", home, "submit", "--wait"}, spinArgs(t, t.TempDir())...)...)
	if env.Error.Code != protocol.CodeDeadlineExceeded || !strings.Contains(env.Error.Message, "1000 ms") {
		t.Fatalf("a job without --time under --default-time 1s: %+v", env.Error)
	}
	env = cliJSON(t, 0, "--home", home, "capabilities")
	var caps struct {
		Limits map[string]any `json:"limits"`
	}
	if err := json.Unmarshal(env.Result, &caps); err != nil || caps.Limits["default_wall_time_ms"] != "1000" ||
		caps.Limits["max_memory_bytes"] != strconv.FormatUint(ceiling, 10) || caps.Limits["min_memory_bytes"] != "8388608" || caps.Limits["default_memory_bytes"] == "0" {
		t.Fatalf("capabilities limits %v: %v", caps.Limits, err)
	}
	r := cli(t, "--home", home, "capabilities")
	for _, want := range []string{"isolation     isolated: namespaces, seccomp", "enforced      memory, processes, cpu quota (possible, none set), wall time, cancellation", "job time      default 1s"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "not enforced") {
			t.Errorf("human capabilities lack %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
}

// Messages say what happened: an --expect mismatch shows the output, a
// program that reads an input the job did not give says how many it
// gave, and a cancellation's reason is said once.
func TestMessages(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	prog := writeProgram(t, t.TempDir(), "add.nox", "[5 [[0 2] [0 6]]]")
	env := cliJSON(t, 5, runArgs(home, prog, "--input-values", "3,5", "--expect", "9")...)
	if env.Error.Code != protocol.CodeClaimMismatch || !strings.Contains(env.Error.Message, "the program produced [8]") {
		t.Errorf("--expect mismatch: %+v", env.Error)
	}
	env = cliJSON(t, 1, runArgs(home, prog, "--input-values", "3")...)
	if env.Error.Code != protocol.CodeExecutionFailed || !strings.Contains(env.Error.Message, "the job gave 1 input(s)") {
		t.Errorf("a missing input: %+v", env.Error)
	}
	d := startDaemon(t, home, 1)
	defer d.stop(t)
	submitCLI(t, home, "c", spinArgs(t, t.TempDir())...)
	cli(t, "--home", home, "cancel", "c", "--reason", "testing")
	st := waitDone(t, d, "c")
	if st.Job.Error == nil || st.Job.Error.Error() != "cancelled: testing" {
		t.Errorf("cancelled job's error: %v", st.Job.Error)
	}
	// Exit 1: the job ended without a result; 130 would say that result
	// itself was interrupted.
	r := cli(t, "--home", home, "result", "c")
	if r.code != 1 || strings.Count(r.stderr, "cancel") != 1 {
		t.Errorf("result of the cancelled job: %+v", r)
	}
	// The human lines that name the state say the reason after it, not
	// the state again ("running → cancelled: cancelled: testing").
	for _, cmd := range []string{"events", "status"} {
		r := cli(t, "--home", home, cmd, "c")
		if r.code != 0 {
			t.Fatalf("%s: %+v", cmd, r)
		}
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.Count(line, "cancelled") > 1 {
				t.Errorf("%s says cancelled more than once: %q", cmd, line)
			}
		}
	}
}

// A one-shot run keeps its attempt's running step and records it at the
// attempt's end: the attempt's start is still the worker's launch (the
// time of its "worker launched" event), not the end's, so status says how
// long it ran. The job runs into its 1 s deadline, which runs from the
// launch's beginning: its wall time is at least that long, and it ran
// for most of it.
func TestOneShotAttemptTiming(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	if r := cli(t, runArgs(home, append(spinArgs(t, t.TempDir()), "--time", "1s", "--job-id", "t1")...)...); r.code != 1 || !strings.Contains(r.stderr, "deadline_exceeded") {
		t.Fatalf("run: %+v", r)
	}
	d := startDaemon(t, home, 1)
	defer d.stop(t)
	st, err := d.client.Status(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	a := st.Attempts[0]
	if time.Duration(a.Telemetry.WallTimeMS)*time.Millisecond < time.Second {
		t.Errorf("attempt 1: wall time %s, want at least its 1s deadline", time.Duration(a.Telemetry.WallTimeMS)*time.Millisecond)
	}
	if ran := a.Ended.Sub(a.Started); ran < time.Second/2 {
		t.Errorf("attempt 1 started %s, ended %s: ran %s, want most of its 1s deadline", a.Started, a.Ended, ran)
	}
	evs, err := d.client.Events(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs {
		if e.Reason == "worker launched" {
			found = true
			if !e.Time.Equal(a.Started) {
				t.Errorf("attempt started %s, its worker launched %s", a.Started, e.Time)
			}
		}
	}
	if !found {
		t.Errorf("no worker launched event in %+v", evs)
	}
	if r := cli(t, "--home", home, "status", "t1"); !regexp.MustCompile(`attempt 1: failed \(ran ([5-9][0-9]{2}ms|[1-9][0-9.]*s),`).MatchString(r.stdout) {
		t.Errorf("status: %s", r.stdout)
	}
}

// Ctrl-C on events --follow stops following: exit 130, interrupted (not
// cancelled: the job runs on, and the message says so), and not "no
// daemon" (exit 4) — the daemon is there.
func TestEventsFollowSignal(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	defer d.stop(t)
	submitCLI(t, home, "ef", spinArgs(t, t.TempDir())...)
	p := startCLI(t, "--home", home, "events", "--follow", "ef")
	awaitHeldSocket(t, p.cmd.Process.Pid) // its long poll
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != exitCancelled || !strings.Contains(p.stderrText(), "interrupted: stopped following (signal); job ef goes on") {
		t.Fatalf("exit %d: %s", code, p.stderrText())
	}
	if !strings.Contains(p.stdout.String(), "→ queued: submitted") {
		t.Errorf("events printed before the signal: %q", p.stdout.String())
	}
	if st, err := d.client.Status(context.Background(), "ef"); err != nil || st.Job.State.Terminal() {
		t.Fatalf("after the follow stopped: %+v %v", st, err)
	}
	cli(t, "--home", home, "cancel", "ef")
	waitDone(t, d, "ef")
}

// A daemon that stops while events --follow follows a job ends the
// follow as run and submit --wait end theirs (exit 4, unavailable): the
// daemon stopped answering while the job was followed, and the job is
// not lost. It said "no daemon on SOCKET; start serve", as if there had
// never been one.
func TestEventsFollowDaemonStop(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	submitCLI(t, home, "ef", append([]string{"--retries", "1"}, spinArgs(t, t.TempDir())...)...)
	waitRunning(t, d, "ef", 1)
	p := startCLI(t, "--home", home, "events", "--follow", "ef")
	awaitHeldSocket(t, p.cmd.Process.Pid) // its long poll
	d.stop(t)
	if code := p.wait(t); code != 4 || !strings.Contains(p.stderrText(), "stopped answering while this command followed job ef") ||
		!strings.Contains(p.stderrText(), "start `cyber-supervisor --home "+home+" serve`, then see `cyber-supervisor --home "+home+" status ef`") {
		t.Fatalf("exit %d: %s", code, p.stderrText())
	}
	d = startDaemon(t, home, 1)
	defer d.stop(t)
	waitRunning(t, d, "ef", 2)
	cli(t, "--home", home, "cancel", "ef")
	waitDone(t, d, "ef")
}
