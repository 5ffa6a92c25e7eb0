package integration

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// TestServeFaults stops one home's daemon again and again while jobs are
// submitted, cancelled and collected: SIGTERM, SIGINT or SIGKILL at a
// random moment, also while it starts and recovers. After each start it
// checks what the seed promises across crashes: every job the daemon
// answered a submission of is there exactly once (or was removed by gc,
// and its id is then refused); no job has more than one accepted
// attempt, more attempts than its policy allows, or an attempt still
// live beside a terminal job; a job that ended stays as it ended; a
// retryable failure with attempts left was retried, and a shutdown's
// interruption always (it is not counted against the policy); and after
// every clean stop nothing of a worker is left
// (processes, cgroups, sockets, mounts).
//
// FAULT_ROUNDS rounds (default 3, a smoke run for CI; scripts/
// fault-serve.sh runs many), FAULT_SEED to replay one.
func TestServeFaults(t *testing.T) {
	requireIsolation(t)
	rounds, seed := faultRounds(t, 3)
	f := &serveFaults{faultBook: newFaultBook(t, seed, 0x5eed), home: newHome(t)}
	for round := 1; round <= rounds && !t.Failed(); round++ {
		f.round(round)
	}
	if t.Failed() {
		return
	}
	p := f.start(0)
	f.check("final")
	f.stop(p, syscall.SIGTERM)
	checkLeaks(t, f.home)
}

type serveFaults struct {
	*faultBook
	home string
}

// serveProc is one serve process.
type serveProc struct {
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

func (f *serveFaults) launch() *serveProc {
	p := &serveProc{log: &bytes.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(supervisorBin, "--home", f.home, "serve", "--worker", workerBin, "--isolation", "required",
		"--slots", "3", "--cgroup-name", cgroupName, "--log-level", "warn")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	f.t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	return p
}

// start launches serve, first stopping maybe one start early (within
// early, before it answers), and returns once its API answers.
func (f *serveFaults) start(early time.Duration) *serveProc {
	p := f.launch()
	if early > 0 {
		time.Sleep(early)
		if f.stop(p, []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM}[f.intN(2)]) {
			checkLeaks(f.t, f.home)
		}
		p = f.launch()
	}
	c := api.NewClient(supervisor.SocketPath(f.home))
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if conn, err := net.Dial("unix", supervisor.SocketPath(f.home)); err == nil {
			conn.Close()
			if _, err := c.List(context.Background(), ""); err == nil {
				return p
			}
		}
		select {
		case <-p.done:
			f.t.Fatalf("serve exited: %v\n%s", p.cmd.ProcessState, p.log)
		default:
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("serve did not come up\n%s", p.log)
		}
	}
}

// stop signals serve and waits for it, and reports whether it stopped
// cleanly: a SIGTERM or SIGINT ends it with exit 0, unless it lands
// before serve handles signals, which ends it as a crash would.
func (f *serveFaults) stop(p *serveProc, sig syscall.Signal) bool {
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		<-p.done
		f.t.Fatalf("serve did not stop on %v\n%s", sig, p.log)
	}
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if sig != syscall.SIGKILL && !ws.Signaled() && ws.ExitStatus() != 0 {
		f.t.Errorf("serve exit on %v: %v\n%s", sig, p.cmd.ProcessState, p.log)
	}
	return !ws.Signaled() && ws.ExitStatus() == 0
}

func (f *serveFaults) round(n int) {
	early := time.Duration(0)
	if f.rng.IntN(3) == 0 {
		early = time.Duration(1+f.rng.IntN(80)) * time.Millisecond
	}
	p := f.start(early)
	f.check(fmt.Sprintf("round %d", n))
	client := api.NewClient(supervisor.SocketPath(f.home))
	stopWork := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stopWork:
				return
			default:
			}
			f.act(client, n, i)
			time.Sleep(time.Duration(f.intN(150)) * time.Millisecond)
		}
	}()
	time.Sleep(time.Duration(f.intN(2500)) * time.Millisecond)
	sig := []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGKILL}[f.intN(3)]
	clean := f.stop(p, sig)
	close(stopWork)
	wg.Wait()
	if clean {
		checkLeaks(f.t, f.home)
	}
}

// act does one thing a client would: submit one of four kinds of job,
// cancel a recent one, collect ended jobs, or submit a removed id again.
func (f *serveFaults) act(c *api.Client, round, i int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, recent, gone, pick := f.draw("r", round, 10)
	spin := program(f.t, "spin.nox")
	switch {
	case pick < 6:
		var (
			spec  []byte
			retry *apitypes.RetryRequest
		)
		switch pick % 4 {
		case 0:
			spec = jobSpec(f.t, id, protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{3, 5}, protocol.Limits{Reductions: 100})
		case 1: // a deadline, retried twice
			spec = jobSpec(f.t, id, protocol.OpExecute, spin, []uint64{60}, protocol.Limits{Reductions: 1 << 60, WallTimeMS: 1500})
			retry = &apitypes.RetryRequest{MaxAttempts: 3}
		case 2: // runs past most rounds: a stop interrupts it, requeued each time
			spec = jobSpec(f.t, id, protocol.OpExecute, spin, []uint64{60}, protocol.Limits{Reductions: 1 << 60, WallTimeMS: 5000})
			retry = &apitypes.RetryRequest{MaxAttempts: 2}
		case 3: // execution_failed: deterministic, never retried
			spec = jobSpec(f.t, id, protocol.OpExecute, "[8 [0 2]]", []uint64{0}, protocol.Limits{Reductions: 100})
			retry = &apitypes.RetryRequest{MaxAttempts: 3}
		}
		f.submit(ctx, c, id, spec, retry)
	case pick < 8 && len(recent) > 0:
		c.Cancel(ctx, recent[f.intN(len(recent))], "fault test")
	case pick == 8:
		f.collect(ctx, c)
	case len(gone) > 0:
		f.resubmitRemoved(ctx, c, gone, "")
	}
}

// check verifies the invariants on the daemon now running.
func (f *serveFaults) check(when string) {
	t := f.t
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := api.NewClient(supervisor.SocketPath(f.home))
	jobs, err := c.List(ctx, "")
	if err != nil {
		t.Fatalf("%s: list: %v", when, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	listed := map[string]int{}
	for _, j := range jobs {
		listed[j.JobID]++
	}
	for id := range f.submitted {
		if listed[id] != 1 {
			t.Errorf("%s: job %s listed %d times", when, id, listed[id])
		}
	}
	states := map[lifecycle.State]int{}
	for _, j := range jobs {
		st, err := c.Status(ctx, j.JobID)
		if err != nil {
			t.Fatalf("%s: status %s: %v", when, j.JobID, err)
		}
		ev, err := c.Events(ctx, j.JobID)
		if err != nil {
			t.Fatalf("%s: events %s: %v", when, j.JobID, err)
		}
		states[f.checkJob(when, st, ev)]++
	}
	t.Logf("%s: %d jobs %v, %d removed", when, len(jobs), states, len(f.removed))
}

// jobProblems lists what is wrong with one job's records.
func jobProblems(st *apitypes.JobStatus, ev []apitypes.Event) []string {
	var out []string
	j, atts := st.Job, st.Attempts
	if int(j.Attempts) != len(atts) {
		out = append(out, fmt.Sprintf("%d attempts counted, %d recorded", j.Attempts, len(atts)))
	}
	if j.Attempts > j.AttemptsAllowed {
		out = append(out, fmt.Sprintf("%d attempts, at most %d allowed (%d by its policy, %d interrupted, %d granted)",
			j.Attempts, j.AttemptsAllowed, j.Retry.MaxAttempts, j.InterruptedAttempts, j.GrantedAttempts))
	}
	interrupted := uint32(0)
	for _, a := range atts {
		if a.Error != nil && a.State == lifecycle.Cancelled && strings.Contains(a.Error.Message, "interrupted by the supervisor's shutdown") {
			interrupted++
		}
	}
	if j.InterruptedAttempts > interrupted {
		// (Fewer may be counted: an interruption of a job whose cancel
		// was requested ends it, uncounted.)
		out = append(out, fmt.Sprintf("%d attempts interrupted by a shutdown, %d counted", interrupted, j.InterruptedAttempts))
	}
	live, accepted := 0, 0
	for i, a := range atts {
		if a.N != uint32(i+1) {
			out = append(out, fmt.Sprintf("attempt %d numbered %d", i+1, a.N))
		}
		if !a.State.Terminal() {
			live++
		}
		if a.State == lifecycle.Accepted {
			accepted++
		}
	}
	switch {
	case live > 1:
		out = append(out, fmt.Sprintf("%d live attempts", live))
	case live == 1 && j.State.Terminal():
		out = append(out, "a live attempt beside the ended job")
	case accepted > 1:
		out = append(out, fmt.Sprintf("%d accepted attempts", accepted))
	case j.State == lifecycle.Accepted && (accepted != 1 || atts[len(atts)-1].State != lifecycle.Accepted || len(j.Result) == 0 || string(j.Result) == "null"):
		out = append(out, "accepted without its last attempt accepted and a result")
	case j.State != lifecycle.Accepted && accepted > 0:
		out = append(out, "an attempt accepted, the job "+string(j.State))
	}
	left := j.Attempts < j.AttemptsAllowed
	switch {
	case j.State == lifecycle.Unknown && left:
		out = append(out, "ended unknown with attempts left")
	case j.State == lifecycle.Failed && left && j.Error != nil && (j.Error.Code == protocol.CodeDeadlineExceeded || j.Error.Code == protocol.CodeInternalError):
		out = append(out, "ended "+string(j.Error.Code)+" with attempts left")
	case j.State == lifecycle.Cancelled && j.Error != nil && strings.Contains(j.Error.Message, "shutdown"):
		// A stop requeues what it interrupts, whatever the policy.
		out = append(out, "ended by a shutdown")
	}
	for _, a := range atts[:max(len(atts)-1, 0)] {
		if a.Error != nil && a.Error.Code == protocol.CodeExecutionFailed {
			out = append(out, fmt.Sprintf("attempt %d's execution_failed (deterministic) was retried", a.N))
		}
	}
	var last uint64
	acceptedEvents := 0
	for _, e := range ev {
		if e.Seq <= last {
			out = append(out, "events out of order")
		}
		last = e.Seq
		if e.To == lifecycle.Accepted {
			acceptedEvents++
		}
	}
	if acceptedEvents > 1 {
		out = append(out, fmt.Sprintf("%d acceptance events", acceptedEvents))
	}
	return out
}
