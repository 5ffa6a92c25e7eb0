package cert

import (
	"context"
	"fmt"

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
	// the memo of the run's pairs (memoEntryBytes an entry) and the
	// witness tape (2.25 times its capacity: it grows by copying). It is
	// what a host with one memory limit sets: a run that holds little
	// may record much, and the other way round.
	MaxMemory uint64
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
	b := p.certificate(&st)
	if uint64(len(b)) > p.maxBytes {
		return nil, tooLargef("the uncompressed certificate would be %d bytes, its bound is %d", len(b), p.maxBytes)
	}
	return &Run{Statement: st, Certificate: b, Result: out.Result, Steps: m.Stats().Steps}, nil
}

// prover records the witness tape as the machine runs.
type prover struct {
	t *table
	// cells memoizes the ids of the run's pairs already in the table
	// (the table itself is by content). Its keys keep their pairs
	// alive, so it is emptied at each of the machine's censuses (m):
	// it holds at most the pairs of one census interval, and what is
	// still held is interned again, by content, to the same ids.
	cells    map[*noun.Cell]uint32
	m        *reduce.Machine
	censuses uint64
	// tape is the witness, after front bytes kept free for the
	// statement (see certificate).
	tape                          []byte
	front                         int
	calls                         uint64
	maxNodes, maxBytes, maxMemory uint64
	// Scratch stacks of intern and emit.
	istack []noun.Noun
	estack []emitItem
}

// newProver returns a prover and the machine it records, in the public
// profile.
func newProver(opt ProveOptions) (*prover, *reduce.Machine) {
	p := &prover{t: newTable(1024), cells: map[*noun.Cell]uint32{}, maxNodes: opt.MaxNodes, maxBytes: opt.MaxBytes, maxMemory: opt.MaxMemory}
	if p.maxBytes == 0 || p.maxBytes > MaxEncodedBytes {
		p.maxBytes = MaxEncodedBytes
	}
	p.m = reduce.New(reduce.Config{
		Provider:   reduce.Public{},
		DepthLimit: DepthLimit,
		MaxCells:   opt.MaxCells,
		MaxSteps:   opt.MaxSteps,
		Tracer:     p,
	})
	return p, p.m
}

// witness is the tape recorded so far.
func (p *prover) witness() []byte { return p.tape[p.front:] }

// Exit is called for every successful reduce call, in post-order. It
// stops the run once the record outgrows its bounds.
func (p *prover) Exit(_, _, result noun.Noun, _, _ uint64) error {
	p.calls++
	if c := p.m.Stats().Censuses; c != p.censuses {
		p.censuses = c
		p.cells = make(map[*noun.Cell]uint32, len(p.cells)/2)
	}
	p.writeRef(result)
	if p.maxNodes != 0 && uint64(p.t.len()) > p.maxNodes {
		return fmt.Errorf("%w: the certificate's node table outgrew %d nodes", reduce.ErrCellLimit, p.maxNodes)
	}
	if uint64(len(p.tape)-p.front) > p.maxBytes {
		return tooLargef("the uncompressed certificate outgrew its bound of %d bytes", p.maxBytes)
	}
	if p.front == 0 && len(p.tape) > frontAfter {
		p.makeFront()
	}
	if p.maxMemory != 0 && p.calls%memoryEvery == 0 {
		if held := p.held(); held > p.maxMemory {
			return fmt.Errorf("%w: the run and its certificate's record hold about %d bytes, more than %d", reduce.ErrCellLimit, held, p.maxMemory)
		}
	}
	return nil
}

// intern adds n to the table (children before parents, head before tail:
// the order in which the verifier completes definitions) and returns its
// id. Iterative: a result can be millions of levels deep.
func (p *prover) intern(n noun.Noun) uint32 {
	stack := append(p.istack[:0], n)
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		if top.IsAtom() {
			p.t.atom(top.Value())
			stack = stack[:len(stack)-1]
			continue
		}
		if _, ok := p.cells[top.Cell()]; ok {
			stack = stack[:len(stack)-1]
			continue
		}
		h, tl := top.Head(), top.Tail()
		hid, hok := p.known(h)
		tid, tok := p.known(tl)
		if !hok || !tok {
			// The tail is pushed first so that the head is interned
			// first.
			if !tok {
				stack = append(stack, tl)
			}
			if !hok {
				stack = append(stack, h)
			}
			continue
		}
		id, _ := p.t.pair(hid, tid)
		p.cells[top.Cell()] = id
		stack = stack[:len(stack)-1]
	}
	p.istack = stack[:0]
	return p.id(n)
}

// known is the id of n if it is interned already. A new atom is not
// known: intern adds it in its turn, so that ids follow the walk.
func (p *prover) known(n noun.Noun) (uint32, bool) {
	if n.IsAtom() {
		id, ok := p.t.atoms[n.Value()]
		return id, ok
	}
	id, ok := p.cells[n.Cell()]
	return id, ok
}

// id of a noun already interned.
func (p *prover) id(n noun.Noun) uint32 {
	id, _ := p.known(n)
	return id
}

// writeRef appends a reference to n: a back-reference to a node the
// verifier already has, otherwise a definition (pre-order in bytes).
func (p *prover) writeRef(n noun.Noun) {
	next := p.t.len()
	p.intern(n)
	p.emit(n, next)
}

// emitItem is a node still to write, or (close) the end of a pair
// definition, where the verifier numbers the pair.
type emitItem struct {
	n     noun.Noun
	close bool
}

// emit writes n given that the verifier knows the ids below next.
// Definitions complete in the order intern numbered them, so the verifier
// knows an id exactly when it is below next at that point.
func (p *prover) emit(n noun.Noun, next uint32) {
	stack := append(p.estack[:0], emitItem{n: n})
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.close {
			next++
			continue
		}
		id := p.id(it.n)
		switch {
		case id < next:
			p.tape = appendUvarint(p.tape, uint64(refBack+(next-1-id)))
		case it.n.IsAtom():
			p.tape = appendUvarint(p.tape, refAtom)
			p.tape = appendUvarint(p.tape, it.n.Value())
			next++
		default:
			p.tape = appendUvarint(p.tape, refPair)
			stack = append(stack, emitItem{close: true}, emitItem{n: it.n.Tail()}, emitItem{n: it.n.Head()})
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
