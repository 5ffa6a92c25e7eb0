package cert

import (
	"context"
	"fmt"
	"io"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// ProfileV2 is the exact profile id of the streamed certificate
// (docs/certificate.md): a header (program, inputs, budget) first, the
// witness as the run goes, and the run's outputs, reductions and call
// count in a trailer, over a node table that prover and verifier both
// collect at the same points.
const ProfileV2 = "cyber-nox-public-trace-v2"

// MagicV2 starts every v2 certificate.
const MagicV2 = "CYNXTRC2"

// CollectMinNodes is the profile's Wmin: a v2 node table is collected
// after the exit of a call when it holds at least max(CollectMinNodes,
// twice the nodes the last collection kept). It is part of the format:
// prover and verifier must collect at the same points. 2^17 nodes are
// 32 MiB at ProverNodeBytes a node (about 13 MB measured), so a
// prover's own data stays within 64 MiB whenever what the run itself
// keeps alive is smaller than that; a collection comes after at least
// 2^16 new nodes, so its cost (in proportion to what it keeps) is a
// small constant a node.
const CollectMinNodes = 1 << 17

// ProveTo runs and certifies like Prove, writing the v2 certificate to w
// as the run goes (w is typically a zstd encoder over the artifact file).
// Run.Certificate is nil. Memory: bounded whatever the length of the run
// (the node table is collected, the witness is streamed through a 64 KiB
// buffer). opt.MaxBytes bounds the bytes written (0: unbounded); MaxNodes
// bounds the nodes the table holds at once, MaxMemory what the run and
// the prover hold (heldV2). On an error, what was written is no
// certificate and must be discarded; a write error is returned wrapped.
func ProveTo(ctx context.Context, w io.Writer, program noun.Noun, inputs []uint64, budget uint64, opt ProveOptions) (*Run, error) {
	run, _, err := proveTo(ctx, w, program, inputs, budget, opt)
	return run, err
}

// proveTo is ProveTo, returning its prover for the tests' look at what
// it held.
func proveTo(ctx context.Context, w io.Writer, program noun.Noun, inputs []uint64, budget uint64, opt ProveOptions) (*Run, *prover, error) {
	if _, err := noun.Measure(program, MaxProgramNodes, MaxProgramDepth); err != nil {
		return nil, nil, fmt.Errorf("%w: the program exceeds %d nodes or depth %d", ErrNotProvable, MaxProgramNodes, MaxProgramDepth)
	}
	if len(inputs) > MaxInputs {
		return nil, nil, fmt.Errorf("%w: %d inputs, a statement holds at most %d", ErrNotProvable, len(inputs), MaxInputs)
	}
	tokens := noun.AppendTokens(nil, program)
	subject := noun.Subject(inputs)
	p, m, q := newProverPiped(opt, usePipeline(opt.Pipeline))
	p.startV2(w, opt)
	p.v2.pipelined = q != nil
	p.writeHeaderV2(tokens, inputs, budget)
	p.v2.roots = append(p.v2.roots[:0], p.intern(program), p.intern(subject))
	if q != nil {
		q.start(ctx)
	}
	out, err := m.Reduce(ctx, subject, program, budget)
	if q != nil {
		// No goroutine outlives ProveTo. A failed run stops the
		// prover at once; otherwise it records every step first, so
		// that a bound it hits is the error, as when sequential.
		if err != nil {
			q.abandon()
		} else {
			err = q.finish()
		}
	}
	if err != nil {
		return nil, nil, err
	}
	switch out.Status {
	case reduce.Halt:
		return nil, nil, fmt.Errorf("%w: budget exhausted (halt with %d left)", ErrNotProvable, out.Remaining)
	case reduce.Error:
		if m.DepthExceeded() && out.Kind == reduce.Malformed {
			return nil, nil, fmt.Errorf("%w: execution failed with %s (the reduction went deeper than the depth limit of %d)", ErrNotProvable, out.Kind, DepthLimit)
		}
		return nil, nil, fmt.Errorf("%w: execution failed with %s", ErrNotProvable, out.Kind)
	}
	outputs, err := noun.AppendAtoms(nil, out.Result, MaxOutputs)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: more than %d output atoms", ErrNotProvable, MaxOutputs)
	}
	st := Statement{
		Program: tokens, Inputs: append([]uint64(nil), inputs...), Outputs: outputs,
		Reductions: out.Cost(budget), Budget: budget,
	}
	if err := p.finishV2(&st); err != nil {
		return nil, nil, err
	}
	return &Run{Statement: st, Result: out.Result, Steps: m.Stats().Steps}, p, nil
}

// proverV2 is what a v2 prover keeps besides the v1 prover's table and
// memo: the output buffer and the collection's roots.
type proverV2 struct {
	w       io.Writer
	buf     []byte // not yet written to w
	written uint64 // bytes written to w
	err     error  // the first write error
	// roots are the program's and the subject's slots, then the
	// results of the calls that have exited whose parent has not
	// (depth[i] is the call's depth): everything a later step can name.
	roots     []uint32
	depths    []int32
	threshold uint64
	wmin      uint64
	// pipelined: the steps run on a goroutine of their own
	// (provepipe.go), whose pool of records heldV2 counts.
	pipelined bool
}

// flushAt is when the buffer is written out.
const flushAt = 64 << 10

// memoMaxV2 is the most pairs the memo of a v2 prover records before it
// is emptied (as at a census): it bounds the memo and the run's cells it
// keeps alive whether or not the machine takes censuses, and emptying it
// (clearing its slots) costs less than a slot per pair recorded.
const memoMaxV2 = 1 << 16

func (p *prover) startV2(w io.Writer, opt ProveOptions) {
	wmin := uint64(CollectMinNodes)
	if opt.wmin != 0 {
		wmin = opt.wmin
	}
	p.t = newTableV2(1024)
	p.maxBytes = opt.MaxBytes
	p.v2 = &proverV2{w: w, buf: make([]byte, 0, flushAt+2*MaxStepBytes), threshold: wmin, wmin: wmin,
		roots: make([]uint32, 0, 64), depths: make([]int32, 0, 64)}
}

// writeHeaderV2 writes magic, profile, program, inputs and budget.
func (p *prover) writeHeaderV2(tokens []byte, inputs []uint64, budget uint64) {
	s := p.v2
	s.buf = appendHeaderV2(s.buf, tokens, inputs, budget)
}

func appendHeaderV2(b, tokens []byte, inputs []uint64, budget uint64) []byte {
	b = append(b, MagicV2...)
	b = appendUvarint(b, uint64(len(ProfileV2)))
	b = append(b, ProfileV2...)
	b = appendUvarint(b, uint64(len(tokens)))
	b = append(b, tokens...)
	b = appendUvarint(b, uint64(len(inputs)))
	for _, x := range inputs {
		b = appendUvarint(b, x)
	}
	return appendUvarint(b, budget)
}

// appendTrailerV2 is the trailer: outputs, reductions, calls.
func appendTrailerV2(b []byte, outputs []uint64, reductions, calls uint64) []byte {
	b = appendUvarint(b, uint64(len(outputs)))
	for _, x := range outputs {
		b = appendUvarint(b, x)
	}
	b = appendUvarint(b, reductions)
	return appendUvarint(b, calls)
}

// finishV2 writes the trailer and flushes.
func (p *prover) finishV2(st *Statement) error {
	s := p.v2
	s.buf = appendTrailerV2(s.buf, st.Outputs, st.Reductions, p.calls)
	if err := p.flushV2(); err != nil {
		return err
	}
	if p.maxBytes != 0 && s.written > p.maxBytes {
		return tooLargef("the certificate outgrew its bound of %d bytes", p.maxBytes)
	}
	return nil
}

func (p *prover) flushV2() error {
	s := p.v2
	if s.err != nil {
		return s.err
	}
	if p.maxBytes != 0 && s.written+uint64(len(s.buf)) > p.maxBytes {
		return tooLargef("the certificate outgrew its bound of %d bytes", p.maxBytes)
	}
	n, err := s.w.Write(s.buf)
	s.written += uint64(n)
	if err == nil && n < len(s.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		s.err = fmt.Errorf("writing the certificate at byte %d: %w", s.written, err)
		return s.err
	}
	s.buf = s.buf[:0]
	return nil
}

// Exit is called for every successful reduce call, in post-order
// (reduce.Tracer), when the prover runs on the machine's goroutine: in
// v2 it is stepV2, with what the machine holds at this step; in v1 it is
// exitV1. (A pipelined prove's tracer is provePipe.)
func (p *prover) Exit(formula, result noun.Noun, depth int) error {
	if p.v2 == nil {
		return p.exitV1(result)
	}
	return p.stepV2(stepKindV2(formula), result, depth, p.m.Censuses(), p.m.Stats().Held)
}

// stepV2 is the v2 prover's step: it records the call's result
// (writeResultV2), keeps its slot among the roots, collects the table
// when it is due, and stops the run once the record outgrows its
// bounds. kind is stepKindV2 of the call's formula; censuses and
// heldCells are the machine's census count and the cells it held at
// the step: the step reads neither the formula nor the machine, so that
// a pipelined prove runs it on its own goroutine (provepipe.go) on a
// record of 24 bytes a step.
//
// The step is one function but for writeResultV2: a loop's step is a
// few loads and stores, and the calls it was split into (exitV2,
// recordV2: frames, spills and reloads) cost a tenth of the prover's
// time. What is rarely due (a collection, a flush, the bounds) is out
// of line, in afterRecordV2.
func (p *prover) stepV2(kind uint8, result noun.Noun, depth int, censuses, heldCells uint64) error {
	p.calls++
	p.runHeld = heldCells
	p.emptyMemoIfDue(censuses)
	id := p.writeResultV2(kind, result, depth)
	s, t := p.v2, p.t
	s.keepRootV2(id, int32(depth))
	if nodes := uint64(t.nodes()); nodes >= s.threshold || (p.maxNodes != 0 && nodes > p.maxNodes) ||
		len(s.buf) >= flushAt || (p.maxMemory != 0 && p.calls%memoryEvery == 0) {
		return p.afterRecordV2()
	}
	return nil
}

// emptyMemoIfDue empties the memo at each of the machine's censuses
// (censuses is the machine's count at the step) and when it has grown
// past its bound. It runs on every step: two compares, inlined; the
// emptying is emptyMemo.
func (p *prover) emptyMemoIfDue(censuses uint64) {
	if censuses != p.censuses || p.cells.n >= memoMaxV2 {
		p.emptyMemo(censuses)
	}
}

func (p *prover) emptyMemo(censuses uint64) {
	if censuses != p.censuses {
		p.censuses = censuses
		p.cells.reset()
	}
	if uint64(p.cells.n) >= max(memoMaxV2, 2*uint64(p.t.nodes())) {
		// A run without censuses (no MaxCells) would otherwise keep
		// every pair it returned alive in the memo. Emptied at a size
		// that follows the table (which the collection bounds), not at
		// a fixed one: the run's live nouns are interned again after
		// each emptying, and a fixed size made that cost quadratic for
		// a run holding more than it (hostile.DeepBranch at 15 did not
		// finish in 90 s, 7 s before).
		p.cells.reset()
	}
}

// keepRootV2 keeps the slot id of the result of a call at depth among
// the roots: the call's children are no longer roots, its result is.
func (s *proverV2) keepRootV2(id uint32, depth int32) {
	n := len(s.depths)
	for n > 0 && s.depths[n-1] > depth {
		n--
	}
	// Truncated and appended in place (a slice assigned to itself
	// writes only its length): writing the array's pointer on every
	// step would cost a write barrier each time the collector marks.
	s.depths = s.depths[:n]
	s.depths = append(s.depths, depth)
	s.roots = s.roots[:n+2]
	s.roots = append(s.roots, id)
}

// afterRecordV2 collects the table when it is due (the rule the verifier
// applies at the same point, walkGC.exit), flushes, and checks the
// bounds.
func (p *prover) afterRecordV2() error {
	s := p.v2
	nodes := uint64(p.t.nodes())
	if nodes >= s.threshold {
		kept := p.t.collect(s.roots)
		s.threshold = max(s.wmin, 2*uint64(kept))
		nodes = uint64(kept)
		// The memo names slots, which the collection may free.
		p.cells.reset()
	}
	if len(s.buf) >= flushAt {
		if err := p.flushV2(); err != nil {
			return err
		}
	}
	if p.maxNodes != 0 && nodes > p.maxNodes {
		return fmt.Errorf("%w: the certificate's node table outgrew %d nodes", reduce.ErrCellLimit, p.maxNodes)
	}
	if p.maxMemory != 0 && p.calls%memoryEvery == 0 {
		if held := p.held(); held > p.maxMemory {
			return fmt.Errorf("%w: the run and its certificate's record hold about %d bytes, more than %d", reduce.ErrCellLimit, held, p.maxMemory)
		}
	}
	return nil
}

// writeResultV2 appends what a v2 certificate writes of a call's result
// (resultFormV2) and returns its slot. The result of a compose or a
// branch is its last child's: the children exited just before it, one
// level deeper, and their slots are the last roots, so it costs no walk
// and no look-up, and nothing is written. The result an axis or a quote
// names is interned (the table holds it) and written as one fixed byte.
// A cons's is the pair of its two children's slots. The others are
// interned and referred to.
func (p *prover) writeResultV2(kind uint8, result noun.Noun, depth int) uint32 {
	s := p.v2
	form := int(kind &^ kindCons)
	n := len(s.depths)
	if form == resultDerived && n > 0 && s.depths[n-1] == int32(depth+1) {
		return s.roots[n+1]
	}
	if v := result.Value(); result.IsAtom() && v < smallAtoms && p.t.small[v] != 0 {
		// A small atom the table has (a loop's counters, tests and
		// tags): found by value, always a back-reference.
		id := p.t.small[v] - 1
		p.writeHeldV2(form, id)
		return id
	}
	if form != resultWritten || n == 0 || s.depths[n-1] != int32(depth+1) {
		return p.writeResultRefV2(form, result)
	}
	if kind&kindCons != 0 && n >= 2 && s.depths[n-2] == int32(depth+1) {
		next := p.t.gc.next
		id, added := p.t.pair(s.roots[n], s.roots[n+1])
		if added {
			p.emitV2(id, next)
		} else {
			s.uvarint(refBack + (next - 1 - p.t.gc.ext[id]))
		}
		// The new cell is not recorded in the memo: most are never
		// named again, and one that is (an axis returns it) is
		// interned then, by a walk that records it, so every walk
		// stays linear in what it records, as before.
		return id
	}
	return p.writeRefV2(result)
}

// The three ways a v2 certificate writes a call's result (docs/certificate.md,
// "Results the verifier knows"): by a reference, as the fixed byte
// namedResultV2 (the node an axis of a non-zero address or a quote names),
// or not at all (a compose's or a branch's: its last child's).
const (
	resultWritten = iota
	resultNamed
	resultDerived
)

// kindCons is set in a step's kind (stepKindV2) when its formula is a
// cons, whose result is the pair of its children's.
const kindCons = 4

// stepKindV2 is what the step needs of a call's formula: resultFormV2,
// with kindCons for a cons.
func stepKindV2(formula noun.Noun) uint8 {
	if formula.Head().Value() == reduce.TagCons {
		return resultWritten | kindCons
	}
	return uint8(resultFormV2(formula))
}

// resultFormV2 is how a v2 certificate writes the result of a successful
// call of formula.
func resultFormV2(formula noun.Noun) int {
	switch formula.Head().Value() {
	case reduce.TagCompose, reduce.TagBranch:
		return resultDerived
	case reduce.TagQuote:
		return resultNamed
	case reduce.TagAxis:
		if a := formula.Tail(); a.IsAtom() && a.Value() != 0 {
			return resultNamed
		}
	}
	return resultWritten
}

// writeHeldV2 writes the result slot id, which the verifier holds, in
// form.
func (p *prover) writeHeldV2(form int, id uint32) {
	switch form {
	case resultNamed:
		p.v2.buf = append(p.v2.buf, namedResultV2)
	case resultWritten:
		p.v2.uvarint(refBack + (p.t.gc.next - 1 - p.t.gc.ext[id]))
	}
}

// writeResultRefV2 writes result in form: interned and referred to, or,
// named or derived, interned only (the verifier holds it).
func (p *prover) writeResultRefV2(form int, result noun.Noun) uint32 {
	if form == resultWritten {
		return p.writeRefV2(result)
	}
	id := p.intern(result)
	p.writeHeldV2(form, id)
	return id
}

// writeRefV2 appends a reference to n: a back-reference to a node the
// verifier holds, otherwise a definition. It returns n's slot.
func (p *prover) writeRefV2(n noun.Noun) uint32 {
	g := p.t.gc
	next := g.next
	id := p.intern(n)
	if x := g.ext[id]; x < next {
		p.v2.uvarint(refBack + (next - 1 - x))
	} else {
		p.emitV2(id, next)
	}
	return id
}

// uvarint appends x to the buffer, byte by byte: an append to the slice
// itself writes only its length (the buffer has room for a step), where
// assigning a slice a function returned would write its pointer too,
// with a write barrier while the collector marks.
func (s *proverV2) uvarint(x uint64) {
	for x >= 0x80 {
		s.buf = append(s.buf, byte(x)|0x80)
		x >>= 7
	}
	s.buf = append(s.buf, byte(x))
}

// emitV2 is emit over certificate ids: the verifier knows a node when
// its id is below next (the nodes intern just added have ids from next
// on, in the order the verifier completes their definitions).
func (p *prover) emitV2(id uint32, next uint64) {
	t := p.t
	ext := t.gc.ext
	s := p.v2
	if !t.isAtom(id) && ext[t.head[id]] < next && ext[t.tail[id]] < next {
		// A pair of known nodes (a cons's new result), without the
		// stack.
		s.buf = append(s.buf, refPair)
		s.uvarint(refBack + (next - 1 - ext[t.head[id]]))
		s.uvarint(refBack + (next - 1 - ext[t.tail[id]]))
		return
	}
	if t.isAtom(id) {
		// A new atom (an arithmetic step's result).
		s.buf = append(s.buf, refAtom)
		s.uvarint(t.val[id])
		return
	}
	stack := append(p.estack[:0], id)
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch {
		case id == emitClose:
			next++
		case ext[id] < next:
			s.uvarint(refBack + (next - 1 - ext[id]))
		case t.isAtom(id):
			s.buf = append(s.buf, refAtom)
			s.uvarint(t.val[id])
			next++
		default:
			s.buf = append(s.buf, refPair)
			stack = append(stack, emitClose, t.tail[id], t.head[id])
		}
	}
	p.estack = stack[:0]
}

// heldV2 is what a v2 prover and its run hold: the run's cells at the
// last step recorded (runHeld: taken on the machine's side), the
// table's slots, the memo, the output buffer and, pipelined, the pool
// of step records.
func (p *prover) heldV2() uint64 {
	held := p.runHeld*reduce.CellBytes +
		uint64(p.t.len())*ProverNodeBytes +
		uint64(len(p.cells.slots))*memoSlotHeld +
		uint64(cap(p.v2.buf)) + uint64(cap(p.v2.roots))*8
	if p.v2.pipelined {
		held += pipeHeld
	}
	return held
}
