package reduce

import (
	"context"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// DefaultDepthLimit is the reference's recursion limit: depth > 1000 is
// Malformed.
const DefaultDepthLimit = 1000

// MaxDepthLimit is the largest depth limit a machine accepts; larger ones
// are lowered to it. The evaluator recurses once per level (about half a
// KiB of Go stack), so this keeps the deepest run near 50 MiB of stack,
// far from the runtime's fatal 1 GB: the limit is what ends a deep run,
// never the stack.
const MaxDepthLimit = 100_000

// pollEvery is how many steps pass between checks of the context. A step
// takes tens of nanoseconds (a hash step about a microsecond), so this
// notices cancellation well within a millisecond.
const pollEvery = 1 << 10

// Config sets up a Machine. The zero value is the reference engine.
type Config struct {
	// Provider answers call and look; nil means Null.
	Provider Provider
	// DepthLimit is the largest allowed recursion depth; 0 means
	// DefaultDepthLimit, above MaxDepthLimit means MaxDepthLimit.
	// Exceeding it is the Malformed outcome.
	DepthLimit int
	// MaxCells bounds the memory a run holds, in cells (0: unbounded),
	// so that a host can bound memory independently of the budget: the
	// pairs reachable from the run's live values, counted by a census
	// every so often (held.go). Pairs the run built and dropped do not
	// count: each is its own allocation, which the collector frees.
	// Over it, the run ends with ErrCellLimit.
	MaxCells uint64
	// MaxSteps bounds the reduce calls of a run (0: unbounded).
	MaxSteps uint64
	// OnStepLimit, if set, is called when a run has gone past MaxSteps
	// (noticed within pollEvery steps) instead of aborting it with
	// ErrStepLimit: it returns a larger MaxSteps and the run goes on, or
	// an error and the run aborts with it. It runs on the run's
	// goroutine and may block there: a host that runs one program in
	// slices pauses it until the next slice's steps are granted.
	OnStepLimit func(steps uint64) (maxSteps uint64, err error)
	// Tracer, if set, sees every successful reduce call in post-order.
	Tracer Tracer
}

// Tracer observes a run. Exit is called when a reduce call succeeds,
// children before parents (a compose's continuation before the compose),
// with the call's formula and result. A non-nil error aborts the run
// with that error (Reduce returns it), so a tracer that records the run
// can stop it once the record outgrows its bounds. depth is the call's
// depth (the root call's is 0, a child's one more than its parent's):
// with the post-order, it gives the call tree, which a prover needs to
// know which results its later calls may still use (a v2 certificate's
// collection roots), and from which it takes the result of a compose,
// a branch or a cons (its children's). Five words of arguments: the
// call is on every step, and they all pass in registers.
type Tracer interface {
	Exit(formula, result noun.Noun, depth int) error
}

// Machine runs reductions. It is not safe for concurrent use; make one per
// goroutine (they are cheap).
type Machine struct {
	provider   Provider
	admit      bool // provider must be consulted before call/look
	witnesses  bool // provider may answer calls with witnesses
	depthLimit int
	maxCells   uint64
	maxSteps   uint64
	onLimit    func(uint64) (uint64, error)
	tracer     Tracer

	heap  noun.Heap
	steps uint64
	done  <-chan struct{}
	ctx   context.Context
	abort error
	// What the run holds (held.go): its roots, the census and its
	// pacing.
	base       pendingRoots
	pend       []pendingRoots
	roots      []noun.Noun
	cells      noun.Census
	tracking   bool
	runStart   uint64
	untracked  uint64
	nextCensus uint64
	censusAt   uint64 // the heap count at the last census (runStart before)
	held       uint64
	censuses   uint64
	// deep: this run went past the depth limit (its Malformed outcome is
	// that, not a malformed formula). Errors end a run at once, so the
	// first one is the outcome.
	deep bool
	// stop is cancelled as a func value, made once: a method value
	// made per call would allocate on every eq.
	stop func() bool
}

// New returns a machine for cfg.
func New(cfg Config) *Machine {
	m := &Machine{
		provider:   cfg.Provider,
		depthLimit: cfg.DepthLimit,
		maxCells:   cfg.MaxCells,
		maxSteps:   cfg.MaxSteps,
		onLimit:    cfg.OnStepLimit,
		tracer:     cfg.Tracer,
	}
	if m.provider == nil {
		m.provider = Null{}
	}
	_, isNull := m.provider.(Null)
	_, isPublic := m.provider.(Public)
	m.admit = !isNull
	m.witnesses = !isNull && !isPublic
	if m.depthLimit <= 0 {
		m.depthLimit = DefaultDepthLimit
	}
	m.depthLimit = min(m.depthLimit, MaxDepthLimit)
	m.stop = m.cancelled
	return m
}

// Stats describe the last run.
type Stats struct {
	Steps uint64 // reduce calls
	Cells uint64 // pairs built by the machine (cumulative over runs)
	// Held is what the run held at its last census, in cells (0 before
	// the first), and Censuses how many it took; a machine without
	// MaxCells takes none.
	Held     uint64
	Censuses uint64
	// HeldBound is at least what the run holds now, without a census:
	// its last census's count plus every pair built since (the pairs
	// built in the run, before its first).
	HeldBound uint64
}

// DepthExceeded reports whether the last Reduce ended Malformed because
// it went deeper than the depth limit, rather than on a formula that is
// not one. The outcome is the same either way (the reference's); this
// only lets a message say which.
func (m *Machine) DepthExceeded() bool { return m.deep }

// Stats returns counters of the machine.
func (m *Machine) Stats() Stats {
	built := m.heap.Count()
	return Stats{Steps: m.steps, Cells: built, Held: m.held, Censuses: m.censuses,
		HeldBound: m.held + built - min(m.censusAt, built)}
}

// Censuses is how many censuses the run in progress has taken
// (Stats().Censuses, without building Stats): a tracer that keeps the
// run's cells alive between censuses reads it on every step.
func (m *Machine) Censuses() uint64 { return m.censuses }

// SetLimits changes the step and cell limits of the run in progress
// (as Config.MaxSteps and Config.MaxCells; 0 is unbounded). It is for a
// Provider or OnStepLimit, on the run's goroutine, while the run waits
// on them: a host that runs a program in slices grants each slice its
// steps, and counts the pairs it hands the run (witnesses it decoded)
// against the run's cells.
func (m *Machine) SetLimits(maxSteps, maxCells uint64) {
	m.maxSteps = maxSteps
	if maxCells != m.maxCells {
		m.maxCells = maxCells
		m.repace()
	}
}

// Reduce applies formula to object under budget. The error is non-nil only
// when the run was aborted (cancelled, over a cell or step limit, or
// refused by the provider); then the Outcome means nothing.
func (m *Machine) Reduce(ctx context.Context, object, formula noun.Noun, budget uint64) (Outcome, error) {
	m.ctx, m.done, m.abort, m.steps, m.deep = ctx, ctx.Done(), nil, 0, false
	m.startCensus(object, formula)
	r, rem, s := m.eval(object, formula, budget, 0)
	// A finished run keeps nothing alive in its roots.
	m.ctx, m.done, m.base = nil, nil, pendingRoots{}
	clear(m.pend)
	switch {
	case s == stOK:
		return Outcome{Status: OK, Result: r, Remaining: rem}, nil
	case s == stHalt:
		return Outcome{Status: Halt, Remaining: rem}, nil
	case s == stAbort:
		return Outcome{}, m.abort
	default:
		return Outcome{Status: Error, Kind: ErrorKind(s - stErr)}, nil
	}
}

// st is the internal status: stOK, stHalt, stAbort, or stErr+kind.
type st uint8

const (
	stOK st = iota
	stHalt
	stAbort
	stErr // + ErrorKind
)

const (
	errType        = stErr + st(TypeError)
	errAxis        = stErr + st(AxisError)
	errInvZero     = stErr + st(InvZero)
	errUnavailable = stErr + st(Unavailable)
	errMalformed   = stErr + st(Malformed)
	errRejected    = stErr + st(CallRejected)
)

var none noun.Noun

// poll runs every pollEvery steps: cancellation and the step limit.
func (m *Machine) poll() bool {
	if m.maxSteps != 0 && m.steps > m.maxSteps {
		if m.onLimit == nil {
			m.abort = fmt.Errorf("%w (%d steps)", ErrStepLimit, m.maxSteps)
			return true
		}
		more, err := m.onLimit(m.steps)
		switch {
		case err != nil:
			m.abort = err
			return true
		case more <= m.steps:
			m.abort = fmt.Errorf("%w (%d steps)", ErrStepLimit, m.maxSteps)
			return true
		}
		m.maxSteps = more
	}
	return m.cancelled()
}

// cancelled records and reports a cancelled run. It is also what a long
// digest (a large fresh noun in eq, hash or axis 0) polls, as m.stop: one
// reduce step must not hold a run for seconds.
func (m *Machine) cancelled() bool {
	select {
	case <-m.done:
		m.abort = fmt.Errorf("%w: %w", ErrCancelled, m.ctx.Err())
		return true
	default:
		return false
	}
}

// cons builds a pair, taking a census when one is due (held.go).
// ok=false means the run is aborted. Every other value the run holds
// must be among its roots here: a caller that builds more than one pair
// builds the others with m.heap.Cons and this one last, over them.
func (m *Machine) cons(a, b noun.Noun) (noun.Noun, bool) {
	n := m.heap.Cons(a, b)
	if m.heap.Count() >= m.nextCensus && !m.census(n) {
		return none, false
	}
	return n, true
}
