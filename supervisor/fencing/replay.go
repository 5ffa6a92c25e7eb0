package fencing

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// A run of an invocation's program is kept, suspended in its own
// goroutine, from one slice to the next (live.go): an act's outcome is
// handed to the call that waits for it and the run goes on. Only a run
// started afresh (after a restart, or when the kept one was dropped)
// replays: each call it reaches is served from the outcome log, in
// order, as long as the log has an entry. The program is deterministic,
// so it reaches the same calls with the same tags and arguments. The
// first call past the log stops the run: it is the next operation.

// logEntry is one recorded act of the invocation, by ordinal.
type logEntry struct {
	op      *store.Operation
	outcome *store.Outcome
	value   noun.Noun // the witness, when the outcome is a value
}

// suspension is where a run stopped at a new act.
type suspension struct {
	tag      uint64
	argument []byte // canonical tokens of the object at the call
}

var (
	errSuspend    = errors.New("suspended at an act")
	errOutOfSteps = errors.New("the slice used its reservation")
	errDiverged   = errors.New("the program did not reach the recorded act")
	errArgument   = errors.New("the act's argument is too large")
	// errDropped ends a kept run that will not be resumed.
	errDropped = errors.New("the suspended run was dropped")
)

// The provider of a live run: Admit, Look and Call run on the run's
// goroutine.

func (r *liveRun) Admit(pattern uint64) error {
	if pattern == reduce.TagLook {
		return protocol.Errorf(protocol.CodeUnsupportedState, "look (pattern 17) is not offered in the host-act environment")
	}
	return nil
}

func (r *liveRun) Look([4]uint64, uint64, uint64) (uint64, bool, error) { return 0, false, nil }

func (r *liveRun) Call(tag uint64, o noun.Noun) (noun.Noun, bool, error) {
	// A call past the slice's steps waits for the next slice's.
	for r.m.Stats().Steps > r.allowed {
		if err := r.pauseSteps(); err != nil {
			return noun.Noun{}, false, err
		}
	}
	arg, err := encodeArgument(o)
	if err != nil {
		return noun.Noun{}, false, err
	}
	var ent logEntry
	if r.served < len(r.log) {
		ent = r.log[r.served]
		r.log[r.served] = logEntry{} // served: its witness is the run's now
		if ent.op.Tag != tag || !bytes.Equal(ent.op.Argument, arg) {
			r.diverged = ent.op.ID
			return noun.Noun{}, false, errDiverged
		}
	} else {
		msg := r.stopAt(runStop{kind: stopAct, suspend: &suspension{tag: tag, argument: arg}})
		if msg.err != nil {
			return noun.Noun{}, false, msg.err
		}
		r.allowed = msg.allowed
		if ent, err = r.take(msg.entry); err != nil {
			return noun.Noun{}, false, err
		}
		r.m.SetLimits(r.allowed, r.maxCells)
	}
	r.served++
	if ent.outcome.Kind == store.OutcomeFailed {
		// No witness: the call halts, as nox defines it.
		r.failed = r.served - 1
		return noun.Noun{}, false, nil
	}
	return ent.value, true, nil
}

// take decodes the outcome of the act the run stopped at, counting its
// pairs against the run's cells.
func (r *liveRun) take(ent *logEntry) (logEntry, error) {
	if ent.outcome.Kind != store.OutcomeValue {
		return *ent, nil
	}
	pairs := tokenPairs(ent.outcome.Value)
	// Against what the run held at its last census: the machine's next
	// census, paced by the lowered bound, counts the rest.
	if held := r.m.Stats().Held; held >= r.maxCells || pairs >= r.maxCells-held {
		return logEntry{}, fmt.Errorf("%w: the witnesses hold %d pairs more", reduce.ErrCellLimit, pairs)
	}
	v, err := store.DecodeNoun(ent.outcome.Value)
	if err != nil {
		// plan checked the tokens: not reached unless memory is bad.
		return logEntry{}, fmt.Errorf("decode the outcome of %s: %w", ent.op.ID, err)
	}
	r.maxCells -= pairs
	out := *ent
	out.value = v
	return out, nil
}

// pauseSteps stops the run until a slice grants it steps beyond those
// it has taken.
func (r *liveRun) pauseSteps() error {
	msg := r.stopAt(runStop{kind: stopSteps})
	if msg.err != nil {
		return msg.err
	}
	r.allowed = msg.allowed
	r.m.SetLimits(r.allowed, r.maxCells)
	return nil
}

// onStepLimit is the machine's hook when the run passes its slice's
// steps between two calls.
func (r *liveRun) onStepLimit(steps uint64) (uint64, error) {
	for steps > r.allowed {
		if err := r.pauseSteps(); err != nil {
			return 0, err
		}
	}
	return r.allowed, nil
}

// encodeArgument is the canonical encoding of an act's argument, bounded
// by the largest argument any descriptor may take.
func encodeArgument(o noun.Noun) ([]byte, error) {
	if _, err := noun.Measure(o, protocol.MaxArgumentBytesLimit, store.MaxNounDepth); err != nil {
		return nil, errArgument
	}
	b := noun.AppendTokens(nil, o)
	if len(b) > protocol.MaxArgumentBytesLimit {
		return nil, errArgument
	}
	return b, nil
}
