package cert

import (
	"context"
	"fmt"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// ProveOptions bound the run that is certified and what recording it may
// keep. Crossing MaxCells, MaxNodes or MaxMemory aborts with an error
// matching reduce.ErrCellLimit, crossing MaxBytes with one matching
// ErrTooLarge.
type ProveOptions struct {
	// MaxCells bounds what the run holds, in cells
	// (reduce.Config.MaxCells); 0: unbounded.
	MaxCells uint64
	MaxSteps uint64 // reduce calls; 0: unbounded
	// MaxNodes bounds the prover's node table (the verifier's, which
	// also holds every distinct atom the run makes); 0: unbounded.
	MaxNodes uint64
	// MaxBytes bounds the encoded certificate; 0 or above
	// MaxEncodedBytes means MaxEncodedBytes.
	MaxBytes uint64
	// MaxMemory bounds, in bytes, what the run and its record hold
	// together (0: unbounded): the run's cells at its last census
	// (reduce.CellBytes each), the node table (ProverNodeBytes a node),
	// the memo of the run's pairs (memoSlotHeld a slot) and the witness
	// tape (twice its blocks, which the certificate copies once, and
	// the statement). It is
	// what a host with one memory limit sets: a run that holds little
	// may record much, and the other way round.
	MaxMemory uint64
	// Pipeline runs a v2 prove's per-step work on a second goroutine
	// when two CPUs are usable (provepipe.go). It pays only where the
	// second CPU is otherwise idle: there a loop's prove takes about a
	// fifth less wall time, for about a quarter more CPU time; on a host
	// whose CPUs are busy it costs the CPU and gains nothing
	// (docs/proving.md). The certificate is the same either way.
	Pipeline bool
	// wmin replaces CollectMinNodes in tests that need many collections
	// in a short run (0: the profile's). Unexported: a certificate made
	// with another value is not a v2 certificate.
	wmin uint64
}

// Run is a certified run: the statement, the outcome and the encoded
// certificate (uncompressed; store it compressed).
type Run struct {
	Statement   Statement
	Certificate []byte
	Result      noun.Noun
	Steps       uint64
}

// Prove runs program on the subject of inputs under budget in the public
// profile and certifies the result. A halt, an error outcome, a program or
// inputs over the statement's limits, or a result with more than
// MaxOutputs atoms return ErrNotProvable (wrapping the reason); an aborted
// run returns the abort error.
func Prove(ctx context.Context, program noun.Noun, inputs []uint64, budget uint64, opt ProveOptions) (*Run, error) {
	if _, err := noun.Measure(program, MaxProgramNodes, MaxProgramDepth); err != nil {
		return nil, fmt.Errorf("%w: the program exceeds %d nodes or depth %d", ErrNotProvable, MaxProgramNodes, MaxProgramDepth)
	}
	if len(inputs) > MaxInputs {
		return nil, fmt.Errorf("%w: %d inputs, a statement holds at most %d", ErrNotProvable, len(inputs), MaxInputs)
	}
	tokens := noun.AppendTokens(nil, program)
	subject := noun.Subject(inputs)
	p, m := newProver(opt)
	p.intern(program)
	p.intern(subject)
	out, err := m.Reduce(ctx, subject, program, budget)
	if err != nil {
		return nil, err
	}
	switch out.Status {
	case reduce.Halt:
		return nil, fmt.Errorf("%w: budget exhausted (halt with %d left)", ErrNotProvable, out.Remaining)
	case reduce.Error:
		if m.DepthExceeded() && out.Kind == reduce.Malformed {
			return nil, fmt.Errorf("%w: execution failed with %s (the reduction went deeper than the depth limit of %d)", ErrNotProvable, out.Kind, DepthLimit)
		}
		return nil, fmt.Errorf("%w: execution failed with %s", ErrNotProvable, out.Kind)
	}
	outputs, err := noun.AppendAtoms(nil, out.Result, MaxOutputs)
	if err != nil {
		return nil, fmt.Errorf("%w: more than %d output atoms", ErrNotProvable, MaxOutputs)
	}
	st := Statement{
		Program: tokens, Inputs: append([]uint64(nil), inputs...), Outputs: outputs,
		Reductions: out.Cost(budget), Budget: budget,
	}
	b, err := p.certificate(&st)
	if err != nil {
		return nil, err
	}
	return &Run{Statement: st, Certificate: b, Result: out.Result, Steps: m.Stats().Steps}, nil
}

// prover records the witness tape as the machine runs.
type prover struct {
	t *table
	// cells memoizes the ids of the run's pairs already in the table
	// (the table itself is by content). It keeps its pairs alive, so it
	// is emptied at each of the machine's censuses (m): it holds at most
	// the pairs of one census interval, and what is still held is
	// interned again, by content, to the same ids.
	cells    cellMemo
	m        *reduce.Machine
	censuses uint64
	// runHeld is the cells the run held at the last v2 step (the
	// machine's Stats().Held, taken on the machine's side).
	runHeld uint64
	// tape is the witness; the statement goes before it (certificate).
	tape                          tape
	calls                         uint64
	maxNodes, maxBytes, maxMemory uint64
	// v2 is set when the prover streams a v2 certificate (provev2.go).
	v2 *proverV2
	// Scratch stacks of intern and emit.
	istack []internFrame
	estack []uint32
}

// newProver returns a prover and the machine it records, in the public
// profile.
func newProver(opt ProveOptions) (*prover, *reduce.Machine) {
	p, m, _ := newProverPiped(opt, false)
	return p, m
}

// newProverPiped is newProver, with the machine's steps handed to the
// prover through a pipeline (provepipe.go) when piped.
func newProverPiped(opt ProveOptions, piped bool) (*prover, *reduce.Machine, *provePipe) {
	p := &prover{t: newTable(1024), cells: newCellMemo(), maxNodes: opt.MaxNodes, maxBytes: opt.MaxBytes, maxMemory: opt.MaxMemory}
	if p.maxBytes == 0 || p.maxBytes > MaxEncodedBytes {
		p.maxBytes = MaxEncodedBytes
	}
	var tracer reduce.Tracer = p
	var q *provePipe
	if piped {
		q = newProvePipe(p)
		tracer = q
	}
	p.m = reduce.New(reduce.Config{
		Provider:   reduce.Public{},
		DepthLimit: DepthLimit,
		MaxCells:   opt.MaxCells,
		MaxSteps:   opt.MaxSteps,
		Tracer:     tracer,
	})
	if q != nil {
		q.m = p.m
	}
	return p, p.m, q
}

// witness is the tape recorded so far, copied.
func (p *prover) witness() []byte { return p.tape.appendTo(nil) }

// exitV1 is Exit in the v1 profile: it records result on the tape and
// stops the run once the record outgrows its bounds.
func (p *prover) exitV1(result noun.Noun) error {
	p.calls++
	if c := p.m.Stats().Censuses; c != p.censuses {
		p.censuses = c
		p.cells.reset()
	}
	p.writeRef(result)
	if p.maxNodes != 0 && uint64(p.t.len()) > p.maxNodes {
		return fmt.Errorf("%w: the certificate's node table outgrew %d nodes", reduce.ErrCellLimit, p.maxNodes)
	}
	if uint64(p.tape.len()) > p.maxBytes {
		return tooLargef("the uncompressed certificate outgrew its bound of %d bytes", p.maxBytes)
	}
	if p.maxMemory != 0 && p.calls%memoryEvery == 0 {
		if held := p.held(); held > p.maxMemory {
			return fmt.Errorf("%w: the run and its certificate's record hold about %d bytes, more than %d", reduce.ErrCellLimit, held, p.maxMemory)
		}
	}
	return nil
}

// internFrame is a pair whose children intern is walking: its head
// (stage 0), then its tail (stage 1, head's id known), then itself.
// 24 bytes: a frame per level of a deep result.
type internFrame struct {
	n     noun.Noun
	head  uint32
	walk  uint8 // nodes walked below n so far, up to memoMinWalk
	stage uint8
}

// memoMinWalk is the smallest walk a pair is memoized for: a smaller
// noun is cheaper to intern again by content than to record (most of a
// loop's results are small and new), and the walk of any noun stays
// linear in what it memoizes, as each small subtree it walks again
// hangs from a memoized pair or is the whole noun.
const memoMinWalk = 4

// intern adds n to the table (children before parents, head before tail:
// the order in which the verifier completes definitions) and returns its
// id. Iterative: a result can be millions of levels deep. Each node is
// looked up once: in the memo (a pair) or by value (an atom), then, if
// new, in the table by content.
func (p *prover) intern(n noun.Noun) uint32 {
	if n.IsAtom() {
		id, _ := p.t.atom(n.Value())
		return id
	}
	if id, ok := p.cells.get(n.Cell()); ok {
		return id
	}
	stack := append(p.istack[:0], internFrame{n: n})
	var last uint32  // the id of the child completed last
	var walked uint8 // and the nodes walked for it, up to memoMinWalk
	for {
		top := &stack[len(stack)-1]
		var child noun.Noun
		switch top.stage {
		case 0:
			child = top.n.Head()
		case 1:
			top.head = last
			top.walk = min(top.walk+walked, memoMinWalk)
			child = top.n.Tail()
		default:
			id, _ := p.t.pair(top.head, last)
			walked = min(top.walk+walked+1, memoMinWalk)
			if walked >= memoMinWalk {
				p.cells.put(top.n.Cell(), id)
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				p.istack = stack
				return id
			}
			last = id
			continue
		}
		top.stage++
		walked = 1
		if child.IsAtom() {
			last, _ = p.t.atom(child.Value())
			continue
		}
		if id, ok := p.cells.get(child.Cell()); ok {
			last = id
			continue
		}
		if len(stack) == cap(stack) {
			// Doubled, not grown by append's quarters: a deep
			// result's walk holds a frame per level.
			stack = slices.Grow(stack, len(stack))
		}
		stack = append(stack, internFrame{n: child})
	}
}

// writeRef appends a reference to n: a back-reference to a node the
// verifier already has, otherwise a definition (pre-order in bytes).
func (p *prover) writeRef(n noun.Noun) {
	next := p.t.len()
	if id := p.intern(n); id < next {
		p.tape.uvarint(uint64(refBack + (next - 1 - id)))
	} else {
		p.emit(id, next)
	}
}

// emitClose on emit's stack is the end of a pair definition, where the
// verifier numbers the pair (never an id: ids are below 2^32 - 1).
const emitClose = ^uint32(0)

// emit writes node id given that the verifier knows the ids below next.
// Definitions complete in the order intern numbered them, so the verifier
// knows an id exactly when it is below next at that point. It walks the
// table, not the noun: a node's children are its table entries, and no
// lookup is needed.
func (p *prover) emit(id, next uint32) {
	t := p.t
	stack := append(p.estack[:0], id)
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch {
		case id == emitClose:
			next++
		case id < next:
			p.tape.uvarint(uint64(refBack + (next - 1 - id)))
		case t.isAtom(id):
			p.tape.uvarint(refAtom)
			p.tape.uvarint(t.val[id])
			next++
		default:
			p.tape.uvarint(refPair)
			stack = append(stack, emitClose, t.tail[id], t.head[id])
		}
	}
	p.estack = stack[:0]
}

// Reference encoding: 0 defines a new atom (its value follows), 1 a new pair
// (two references follow), and refBack+k refers to the node k places before
// the newest one.
const (
	refAtom = 0
	refPair = 1
	refBack = 2
)
