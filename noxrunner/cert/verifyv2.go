package cert

import (
	"bytes"
	"slices"
)

// isV2 reports whether the certificate starts with the v2 magic (reading
// nothing past it).
func (r *reader) isV2() bool {
	return string(r.peek(len(MagicV2))) == MagicV2
}

// readHeaderV2 decodes and bounds-checks a v2 header: the statement's
// program, inputs and budget (its outputs and reductions are in the
// trailer).
func readHeaderV2(r *reader) *Statement {
	s := readProgram(r, MagicV2, ProfileV2)
	if s == nil {
		return nil
	}
	s.Inputs = readValues(r, MaxInputs, "input")
	s.Budget = r.uvarint()
	if r.err != nil {
		return nil
	}
	return s
}

// verifyV2 checks a v2 certificate: the header against the job, the
// walk (collecting the table where the rule says), then the trailer
// against what the walk computed, then nothing after it.
func (v *verifier) verifyV2(exp Expect) (*Statement, Checked, error) {
	r := v.r
	st := readHeaderV2(r)
	if r.err != nil {
		return nil, Checked{}, r.err
	}
	if !bytes.Equal(st.Program, exp.Program) {
		return nil, Checked{}, mismatchf("program differs from the saved job")
	}
	if !slices.Equal(st.Inputs, exp.Inputs) {
		return nil, Checked{}, mismatchf("inputs differ from the saved job")
	}
	if st.Budget != exp.Budget {
		return nil, Checked{}, mismatchf("statement budget %d differs from the job's %d", st.Budget, exp.Budget)
	}
	// Every call costs at least one reduction.
	v.calls = st.Budget
	// The length is not known: start small, as v1 does for a short
	// certificate, and let the table grow.
	v.t = newTableV2(int(min(256, v.maxNodes)))
	progID, _ := v.t.addTokens(st.Program)
	subjID := v.t.addSubject(st.Inputs)
	if uint64(v.t.nodes()) > v.maxNodes {
		return nil, Checked{}, tooLargef("the statement alone has %d nodes, the bound is %d", v.t.nodes(), v.maxNodes)
	}
	v.gc = newWalkGC(v.t, v.wmin(), progID, subjID)
	res, rem := v.eval(subjID, progID, st.Budget, 0)
	if r.err != nil {
		return nil, Checked{}, r.err
	}
	// The trailer.
	st.Outputs = readValues(r, MaxOutputs, "output")
	st.Reductions = r.uvarint()
	calls := r.uvarint()
	if r.err != nil {
		return nil, Checked{}, r.err
	}
	if calls != v.entered {
		return nil, Checked{}, rejectf("trailer says %d calls, the run made %d", calls, v.entered)
	}
	if st.Budget-rem != st.Reductions {
		return nil, Checked{}, rejectf("reductions %d, the steps cost %d", st.Reductions, st.Budget-rem)
	}
	if !v.outputsEqual(res, st.Outputs) {
		return nil, Checked{}, rejectf("outputs differ from the result")
	}
	if err := v.endV2(); err != nil {
		return nil, Checked{}, err
	}
	if err := v.checkHashes(); err != nil {
		return nil, Checked{}, err
	}
	checked := Checked{Program: true, Inputs: true, Budget: true}
	if exp.Output != nil {
		if !slices.Equal(st.Outputs, exp.Output) {
			return nil, Checked{}, mismatchf("output differs from the expected output")
		}
		checked.Output = true
	}
	return st, checked, nil
}

// endV2 checks that nothing follows the trailer.
func (v *verifier) endV2() error {
	r := v.r
	if r.buffered() > 0 || (!r.open && r.rest() != 0) {
		return rejectf("bytes after the trailer at byte %d", r.at())
	}
	if r.ended(); r.err != nil {
		return r.err
	}
	return nil
}

func (v *verifier) wmin() uint64 {
	if v.wminKnob != 0 {
		return v.wminKnob
	}
	return CollectMinNodes
}

// namedResultV2 is the byte a v2 certificate writes for the result of an
// axis of a non-zero address or of a quote: the node the rule names,
// which the verifier knows, so the byte carries nothing but keeps a call
// without children from costing nothing to read (a certificate's walk
// stays bounded by its bytes: docs/certificate.md).
const namedResultV2 = 2

// namedSlow reads the byte that stands for a result the rule names
// (namedResultV2) where step's inline read of it does not: at the end of
// the reader's window, or another byte (rejected). A failure is recorded
// in the reader, as everywhere in the walk.
func (v *verifier) namedSlow() {
	r := v.r
	if x := r.uvarint(); r.err == nil && x != namedResultV2 {
		r.fail("a result the rule names is not written as its byte")
	}
}

// backV2 resolves a back-reference k places before the newest
// definition. A reference to a node the collection dropped (or before
// the first) is rejected.
func (v *verifier) backV2(k uint64) (uint32, bool) {
	g := v.t.gc
	if k >= g.next {
		v.r.fail("reference before the first node")
		return 0, false
	}
	id, ok := g.slotOf(g.next - 1 - k)
	if !ok {
		v.r.fail("reference to a collected node")
	}
	return id, ok
}

// walkGC is the verifier's side of the collection rule: the same roots
// as the prover's (proverV2), from the walk.
type walkGC struct {
	// prog and subj are the statement's roots; held the results of
	// exited calls whose parent has not exited, with their depths.
	prog, subj uint32
	held       []heldResult
	threshold  uint64
	wmin       uint64
	// dueAt is the certificate id (tableGC.next) at which the table
	// reaches threshold nodes: between collections every definition
	// adds one node and one id, so exit compares one counter instead of
	// counting the table's nodes after every call.
	dueAt uint64
	// roots is collect's scratch.
	roots []uint32
	// collections counts the collections, for the tests.
	collections int
}

// heldResult is a root of the walk: an exited call's result and its depth.
type heldResult struct {
	id    uint32
	depth int32
}

// newWalkGC starts the collection of table t, whose roots are the
// program and the subject.
func newWalkGC(t *table, wmin uint64, prog, subj uint32) *walkGC {
	g := &walkGC{prog: prog, subj: subj, threshold: wmin, wmin: wmin}
	g.setDue(t)
	return g
}

// setDue sets dueAt from the threshold and the table's nodes now.
func (g *walkGC) setDue(t *table) {
	g.dueAt = t.gc.next
	if n := uint64(t.nodes()); n < g.threshold {
		g.dueAt += g.threshold - n
	}
}

// After the call at depth exits with result res (eval, unless the walk
// failed), its children's results stop being roots and its own is one;
// then, if the table is due, the pending digest checks are run and it is
// collected (collect).

// collect runs the pending digest checks (they name nodes the collection
// may drop) and collects the table.
func (g *walkGC) collect(v *verifier) {
	if err := v.checkHashes(); err != nil {
		if v.r.err == nil {
			v.r.err = err
		}
		return
	}
	v.checks.reset()
	g.roots = append(g.roots[:0], g.prog, g.subj)
	for _, h := range g.held {
		g.roots = append(g.roots, h.id)
	}
	kept := v.t.collect(g.roots)
	g.threshold = max(g.wmin, 2*uint64(kept))
	g.setDue(v.t)
	g.collections++
}
