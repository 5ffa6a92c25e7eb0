package fencing

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// A live run is one run of an invocation's program, kept in its own
// goroutine from slice to slice for as long as this process drives the
// invocation. The VM is recursive on the Go stack, so the goroutine is
// the machine's state: when the run stops (at a new act, or out of its
// slice's steps) it waits inside the provider's call, holding nothing
// but its own memory (no store transaction, no ward guard, no place
// among MaxRuns once parked), and the next slice hands it the act's
// outcome or more steps. Every step of a program is then executed once,
// however many acts it makes: a run is replayed from its start only
// when there is no kept run to go on with (a restart, or it was dropped;
// docs/fencing.md, "Steps").

// stopKind is where a run stopped.
type stopKind uint8

const (
	stopAct   stopKind = iota + 1 // at a call past the log: a new act
	stopSteps                     // past its slice's steps
	stopEnd                       // Reduce returned
)

// runStop is a stop of a run, as its goroutine reports it.
type runStop struct {
	kind    stopKind
	suspend *suspension    // stopAct
	outcome reduce.Outcome // stopEnd
	err     error          // stopEnd: an abort, or nil
	steps   uint64         // the machine's steps at the stop
}

// resumeMsg is what a slice hands a stopped run: the steps it may reach
// now (machine steps), the outcome of its act (stopAct), or an error
// that ends it.
type resumeMsg struct {
	allowed uint64
	entry   *logEntry
	err     error
}

// liveRun is a run and what its driver knows of it.
type liveRun struct {
	inv      string
	particle neuron.Particle // the program it runs
	m        *reduce.Machine
	ctx      context.Context
	cancel   context.CancelFunc

	stops  chan runStop   // the goroutine's stops, each received by the slice that runs it
	resume chan resumeMsg // a slice's answer to a stop
	drop   chan struct{}  // closed: a waiting run ends (errDropped)
	done   chan struct{}  // closed when the goroutine has returned
	once   sync.Once

	// The run's state: written by its goroutine while it runs, read by
	// its driver while it is stopped (the channels order the two).
	log      []logEntry // what it replays, from its start
	served   int        // log entries it took, replayed or handed
	failed   int        // index of a failed outcome that halted it, or -1
	diverged string
	allowed  uint64 // machine steps it may reach in this slice
	maxCells uint64 // pairs it may build: MaxCells less its witnesses'

	// The driver's, under the invocation's lock.
	stop runStop
	// offset is what the invocation was charged before the run started
	// when its replay is charged (0 otherwise): charged steps are the
	// machine's plus offset.
	offset uint64
	// at and logLen are the invocation's charged steps and log length a
	// slice that goes on with the run must find; reached says the stop
	// was recorded (its act proposed, or the slice's steps charged), so
	// that slice resumes the run; otherwise it reports the same stop
	// again (a recovery charged it, a settle did not commit, or the stop
	// lies past the slice's steps).
	at      uint64
	logLen  int
	reached bool
	dead    bool   // cancelled or ended: it never runs again
	slot    bool   // holds a place among MaxRuns
	counted bool   // its cells are counted in the lot
	cells   uint64 // pairs it holds at its stop: built and witnesses
	ran     uint64 // machine steps executed until its stop
}

// startRun makes the run of a plan and its goroutine, which waits for
// the first exec. Its witnesses are decoded by the caller.
func (e *Engine) startRun(plan *slicePlan, offset uint64) *liveRun {
	// Its own copy of the log: it lets go of each entry once served.
	r := &liveRun{inv: plan.inv.ID, particle: plan.particle, log: slices.Clone(plan.log), failed: -1, offset: offset,
		stops: make(chan runStop), resume: make(chan resumeMsg), drop: make(chan struct{}), done: make(chan struct{}),
		maxCells: e.cfg.MaxCells - plan.logPairs}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.m = reduce.New(reduce.Config{Provider: r, DepthLimit: DepthLimit, MaxCells: r.maxCells, OnStepLimit: r.onStepLimit})
	subject, program, budget := noun.Subject(plan.inv.Inputs), plan.program, plan.inv.Limit
	e.stats.goroutines.Add(1)
	go func() {
		defer close(r.done) // last: a closer that waited sees the count down
		defer e.stats.goroutines.Add(-1)
		msg, ok := r.wait()
		if !ok {
			return
		}
		r.allowed = msg.allowed
		r.m.SetLimits(r.allowed, r.maxCells)
		out, err := r.m.Reduce(r.ctx, subject, program, budget)
		select {
		case r.stops <- runStop{kind: stopEnd, outcome: out, err: err, steps: r.m.Stats().Steps}:
		case <-r.drop:
		}
	}()
	return r
}

// stopAt reports a stop to the slice that runs the run, and waits for
// the next slice's answer, or to be dropped.
func (r *liveRun) stopAt(s runStop) resumeMsg {
	s.steps = r.m.Stats().Steps
	select {
	case r.stops <- s:
	case <-r.drop:
		return resumeMsg{err: errDropped}
	}
	msg, ok := r.wait()
	if !ok {
		return resumeMsg{err: errDropped}
	}
	return msg
}

func (r *liveRun) wait() (resumeMsg, bool) {
	select {
	case msg := <-r.resume:
		return msg, true
	case <-r.drop:
		return resumeMsg{}, false
	}
}

// exec lets the run go on with msg until its next stop. ctx ending
// meanwhile aborts it (reduce.ErrCancelled), and a run whose context
// ended never runs again.
func (r *liveRun) exec(ctx context.Context, msg resumeMsg) runStop {
	stop := context.AfterFunc(ctx, r.cancel)
	r.resume <- msg
	s := <-r.stops
	if !stop() || s.kind == stopEnd {
		r.dead = true
	}
	return s
}

// close ends the run's goroutine, if it has not ended, and waits for
// it: a stopped run returns errDropped from where it waits.
func (r *liveRun) close() {
	r.once.Do(func() {
		close(r.drop)
		r.cancel()
	})
	<-r.done
}

// charged is a machine step count in the invocation's charged steps.
func (r *liveRun) charged(steps uint64) uint64 { return steps + r.offset }

// machine is a charged step count in the machine's steps.
func (r *liveRun) machine(charged uint64) uint64 {
	if charged < r.offset {
		return 0
	}
	return charged - r.offset
}

// continues reports whether a slice of plan goes on with this run: the
// same program, and the invocation where the run's last slice left it.
func (r *liveRun) continues(plan *slicePlan) bool {
	if r.dead && r.reached || r.particle != plan.particle || plan.inv.Charged != r.at ||
		errors.Is(r.stop.err, reduce.ErrCancelled) {
		return false
	}
	if !r.reached || r.stop.kind == stopSteps {
		return len(plan.log) == r.logLen
	}
	if r.stop.kind != stopAct || len(plan.log) != r.logLen+1 {
		return false
	}
	// The act it stopped at is the log's last entry, with its outcome.
	ent := plan.log[len(plan.log)-1]
	return ent.op.Tag == r.stop.suspend.tag && bytes.Equal(ent.op.Argument, r.stop.suspend.argument)
}

// result is what a slice of plan reached with the run at its stop.
func (r *liveRun) result(plan *slicePlan) runResult {
	s := r.stop
	allowed := plan.inv.Charged + plan.reserved
	res := runResult{err: s.err, outcome: s.outcome, steps: r.charged(s.steps), served: r.served, failed: r.failed,
		diverge: r.diverged, live: r}
	switch s.kind {
	case stopSteps:
		res.err = errOutOfSteps
	case stopAct:
		res.err, res.suspend = errSuspend, s.suspend
		if res.steps > allowed {
			res.err = errOutOfSteps
		}
	case stopEnd:
		if errors.Is(s.err, reduce.ErrStepLimit) || (s.err == nil && res.steps > allowed) {
			res.err = errOutOfSteps
		}
	}
	return res
}
