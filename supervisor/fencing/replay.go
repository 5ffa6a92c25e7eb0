package fencing

import (
	"bytes"
	"errors"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// A slice runs the invocation's program from the start. Each call it
// reaches is served from the outcome log, in order, as long as the log
// has an entry: the program is deterministic, so it reaches the same
// calls with the same tags and arguments, and this is resumption by
// replay. The first call past the log suspends the run: it is the next
// operation.

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
	steps    uint64
}

var (
	errSuspend    = errors.New("suspended at an act")
	errOutOfSteps = errors.New("the slice used its reservation")
	errDiverged   = errors.New("the program did not reach the recorded act")
	errArgument   = errors.New("the act's argument is too large")
)

// replay is the VM provider of a slice.
type replay struct {
	m       *reduce.Machine
	log     []logEntry
	allowed uint64 // total steps this run may reach
	served  int
	failed  int // index of a failed outcome that halted the run, or -1
	suspend *suspension
	// diverged says where the replay left the log.
	diverged string
}

func (p *replay) Admit(pattern uint64) error {
	if pattern == reduce.TagLook {
		return protocol.Errorf(protocol.CodeUnsupportedState, "look (pattern 17) is not offered in the host-act environment")
	}
	return nil
}

func (p *replay) Look([4]uint64, uint64, uint64) (uint64, bool, error) { return 0, false, nil }

func (p *replay) Call(tag uint64, o noun.Noun) (noun.Noun, bool, error) {
	steps := p.m.Stats().Steps
	if steps > p.allowed {
		return noun.Noun{}, false, errOutOfSteps
	}
	arg, err := encodeArgument(o)
	if err != nil {
		return noun.Noun{}, false, err
	}
	if p.served < len(p.log) {
		ent := p.log[p.served]
		if ent.op.Tag != tag || !bytes.Equal(ent.op.Argument, arg) {
			p.diverged = ent.op.ID
			return noun.Noun{}, false, errDiverged
		}
		p.served++
		if ent.outcome.Kind == store.OutcomeFailed {
			// No witness: the call halts, as nox defines it.
			p.failed = p.served - 1
			return noun.Noun{}, false, nil
		}
		return ent.value, true, nil
	}
	p.suspend = &suspension{tag: tag, argument: arg, steps: steps}
	return noun.Noun{}, false, errSuspend
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
