package cert

import (
	"context"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// ProveOptions bound the run that is certified.
type ProveOptions struct {
	MaxCells uint64 // 0: unbounded
	MaxSteps uint64 // 0: unbounded
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
// profile and certifies the result. A halt, an error outcome or an aborted
// run returns ErrNotProvable (wrapping the reason) or the abort error.
func Prove(ctx context.Context, program noun.Noun, inputs []uint64, budget uint64, opt ProveOptions) (*Run, error) {
	tokens := noun.AppendTokens(nil, program)
	subject := noun.Subject(inputs)
	p := &prover{t: newTable(1024), cells: map[*noun.Cell]uint32{}}
	p.t.addNoun(program)
	p.t.addNoun(subject)
	m := reduce.New(reduce.Config{
		Provider:   reduce.Public{},
		DepthLimit: DepthLimit,
		MaxCells:   opt.MaxCells,
		MaxSteps:   opt.MaxSteps,
		Tracer:     p,
	})
	out, err := m.Reduce(ctx, subject, program, budget)
	if err != nil {
		return nil, err
	}
	switch out.Status {
	case reduce.Halt:
		return nil, fmt.Errorf("%w: budget exhausted (halt with %d left)", ErrNotProvable, out.Remaining)
	case reduce.Error:
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
	b := appendStatement(make([]byte, 0, len(p.tape)+len(tokens)+64), &st)
	b = appendUvarint(b, p.calls)
	b = append(b, p.tape...)
	if len(b) > MaxEncodedBytes {
		return nil, fmt.Errorf("%w: certificate would exceed %d bytes", ErrNotProvable, MaxEncodedBytes)
	}
	return &Run{Statement: st, Certificate: b, Result: out.Result, Steps: m.Stats().Steps}, nil
}

// prover records the witness tape as the machine runs.
type prover struct {
	t     *table
	cells map[*noun.Cell]uint32 // cells already in the table
	tape  []byte
	calls uint64
}

// Exit is called for every successful reduce call, in post-order.
func (p *prover) Exit(_, _, result noun.Noun, _, _ uint64) {
	p.calls++
	p.writeRef(result)
}

// intern adds n to the table (children before parents, head before tail:
// the order in which the verifier completes definitions) and returns its id.
func (p *prover) intern(n noun.Noun) uint32 {
	if n.IsAtom() {
		id, _ := p.t.atom(n.Value())
		return id
	}
	if id, ok := p.cells[n.Cell()]; ok {
		return id
	}
	h := p.intern(n.Head())
	tl := p.intern(n.Tail())
	id, _ := p.t.pair(h, tl)
	p.cells[n.Cell()] = id
	return id
}

// id of a noun already interned.
func (p *prover) id(n noun.Noun) uint32 {
	if n.IsAtom() {
		return p.t.atoms[n.Value()]
	}
	return p.cells[n.Cell()]
}

// writeRef appends a reference to n: a back-reference to a node the
// verifier already has, otherwise a definition (pre-order in bytes).
func (p *prover) writeRef(n noun.Noun) {
	next := p.t.len()
	p.intern(n)
	p.emit(n, &next)
}

// emit writes n given that the verifier knows ids below *next.
func (p *prover) emit(n noun.Noun, next *uint32) {
	id := p.id(n)
	if id < *next {
		p.tape = appendUvarint(p.tape, uint64(refBack+(*next-1-id)))
		return
	}
	if n.IsAtom() {
		p.tape = appendUvarint(p.tape, refAtom)
		p.tape = appendUvarint(p.tape, n.Value())
	} else {
		p.tape = appendUvarint(p.tape, refPair)
		p.emit(n.Head(), next)
		p.emit(n.Tail(), next)
	}
	*next++
}

// Reference encoding: 0 defines a new atom (its value follows), 1 a new pair
// (two references follow), and refBack+k refers to the node k places before
// the newest one.
const (
	refAtom = 0
	refPair = 1
	refBack = 2
)
