package cert

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// traceEvent is one successful reduce call: its result and depth, and
// how a v2 certificate writes its result (resultFormV2 of its formula).
type traceEvent struct {
	result noun.Noun
	depth  int
	form   int
}

// recorder is a reduce.Tracer that keeps every call's result.
type recorder struct{ events []traceEvent }

func (r *recorder) Exit(formula, result noun.Noun, depth int) error {
	r.events = append(r.events, traceEvent{result, depth, resultFormV2(formula)})
	return nil
}

// recordedRun is a run of a program, kept to be encoded again.
type recordedRun struct {
	program noun.Noun
	inputs  []uint64
	budget  uint64
	st      Statement
	events  []traceEvent
}

func record(t testing.TB, program noun.Noun, inputs []uint64, budget uint64) *recordedRun {
	t.Helper()
	rec := &recorder{}
	m := reduce.New(reduce.Config{Provider: reduce.Public{}, DepthLimit: DepthLimit, Tracer: rec})
	out, err := m.Reduce(context.Background(), noun.Subject(inputs), program, budget)
	if err != nil || out.Status != reduce.OK {
		t.Fatalf("record: %+v %v", out, err)
	}
	outs, err := noun.AppendAtoms(nil, out.Result, MaxOutputs)
	if err != nil {
		t.Fatal(err)
	}
	return &recordedRun{program: program, inputs: inputs, budget: budget, events: rec.events, st: Statement{
		Program: noun.AppendTokens(nil, program), Inputs: inputs, Outputs: outs,
		Reductions: out.Cost(budget), Budget: budget,
	}}
}

// encodeV2 encodes the recorded run as ProveTo's prover does, with the
// result of call lieAt (if ≥ 0) replaced by lie and the trailer's
// fields by st's: the rest is canonical for what was written.
func (rr *recordedRun) encodeV2(t testing.TB, wmin uint64, lieAt int, lie noun.Noun, st *Statement, calls uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	p := &prover{cells: newCellMemo()}
	p.startV2(&buf, ProveOptions{wmin: wmin})
	p.writeHeaderV2(st.Program, st.Inputs, st.Budget)
	p.v2.roots = append(p.v2.roots[:0], p.intern(rr.program), p.intern(noun.Subject(rr.inputs)))
	for i, e := range rr.events {
		r, form := e.result, e.form
		if i == lieAt {
			r, form = lie, lieForm(form)
		}
		if err := p.exitResultV2(form, r, e.depth); err != nil {
			t.Fatal(err)
		}
	}
	p.calls = calls
	if err := p.finishV2(st); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// lies are the wrong results a forger can give a call whose true result
// is r: another atom value, another pair, another node the verifier
// holds (the subject or the program). Each differs from r.
func lies(r, subject, program noun.Noun) []noun.Noun {
	var out []noun.Noun
	if r.IsAtom() {
		out = append(out, noun.Atom((r.Value()+1)%field.P), noun.Cons(r, noun.Zero))
	} else {
		out = append(out, noun.Atom(0))
		if !noun.Equal(r.Head(), r.Tail()) {
			out = append(out, noun.Cons(r.Tail(), r.Head()))
		} else {
			out = append(out, noun.Cons(r, noun.Zero))
		}
	}
	if !noun.Equal(r, subject) {
		out = append(out, subject)
	} else {
		out = append(out, program)
	}
	return out
}

// forgeryProgram runs a hash chain twice (the second's nodes were
// collected and are defined again), a step of every other pattern (rich:
// inv, eq, arithmetic, words, axis 0, ...), and a tree's build and walk
// between: hashes, conses, axes, branches, compose.
func forgeryProgram(t testing.TB) noun.Noun {
	read := func(name string) string { return strings.TrimSpace(mustRead(t, "testdata/corpus/"+name+".nox")) }
	chain, tree := read("hashchain"), read("tree")
	quoted := func(subject, f string) string { return "[2 [[1 " + subject + "] [1 " + f + "]]]" }
	return parse(t, consAll(
		quoted(forgeryChain, chain), rich, quoted(forgeryTree, tree),
		quoted(forgeryChain, chain), quoted("[3 [5 0]]", rich), "[0 1]",
	))
}

func mustRead(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// forgeryWmin collects the table every few dozen nodes.
const forgeryWmin = 48

// TestV2ForgeryOneLiePerStep: for every call of a run of a few thousand
// calls, with collections in between, a certificate that lies about that
// call's result (another atom, another pair, another live node) and
// encodes everything else canonically is rejected: 0 accepted. Fails
// before v2 (there was no v2 verifier to accept anything), and fails if
// any rule of the walk, the collection or the deferred digest checks is
// skipped.
//
// Each forgery is the honest prefix, then the prover's state at that
// call (a copy) encoding the lie and every later call on demand, as the
// verifier reads: the verifier reads exactly the bytes of the complete
// forged certificate, and the test costs the verifier's walk of each
// prefix rather than the encoding of every forgery whole.
func TestV2ForgeryOneLiePerStep(t *testing.T) {
	rr := record(t, forgeryProgram(t), []uint64{7, 11}, 1_000_000)
	if n := len(rr.events); n < forgeryMinCalls || n > 20000 {
		t.Fatalf("%d calls; the test wants a few thousand", n)
	}
	exp := Expect{Program: rr.st.Program, Inputs: rr.st.Inputs, Budget: rr.st.Budget}
	calls := uint64(len(rr.events))
	honest := rr.encodeV2(t, forgeryWmin, -1, noun.Zero, &rr.st, calls)
	v := &verifier{ctx: context.Background(), r: &reader{b: honest}, maxNodes: DefaultMaxNodes, wminKnob: forgeryWmin}
	if _, _, err := v.verify(exp); err != nil {
		t.Fatalf("honest: %v", err)
	}
	if v.gc.collections < 3 {
		t.Fatalf("honest run: %d definitions, %d collections: not enough", v.t.gc.next, v.gc.collections)
	}
	subject, program := noun.Subject(rr.inputs), rr.program
	var prefix bytes.Buffer
	p := rr.startEncoder(&prefix, forgeryWmin, &rr.st)
	forged, derived, same := 0, 0, 0
	for i, e := range rr.events {
		if err := p.flushV2(); err != nil {
			t.Fatal(err)
		}
		if e.form == resultDerived {
			// Nothing of this call's result is written (the verifier
			// takes its last child's): there is no byte to lie in.
			derived++
		} else {
			for _, lie := range lies(e.result, subject, program) {
				g := &forgedStream{prefix: prefix.Bytes(), honest: honest, rr: rr, next: i, lieAt: i, lie: lie, calls: calls}
				g.p = cloneProverV2(p, &g.out)
				_, _, err := VerifyFrom(context.Background(), g, -1, exp, Bounds{wmin: forgeryWmin})
				if err == nil && !g.forgery() {
					// The lie changed no byte (a result the rule names,
					// "written" as a reference that is its byte, and
					// never used again): this is the honest certificate.
					same++
					continue
				}
				if !errors.Is(err, ErrRejected) {
					t.Fatalf("call %d (depth %d, form %d), result %v replaced by %v: %v, want rejected", i, e.depth, e.form, e.result, lie, err)
				}
				forged++
			}
		}
		if err := p.exitResultV2(e.form, e.result, e.depth); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d calls (%d compose or branch, whose result is not written), %d collections, %d forgeries, 0 accepted (%d lies wrote the honest bytes)",
		len(rr.events), derived, v.gc.collections, forged, same)
}

// lieForm is how a forger writes a lie at a call whose result the
// certificate writes in form: a result the rule names is written as a
// reference to the lie instead of its byte.
func lieForm(form int) int {
	if form == resultNamed {
		return resultWritten
	}
	return form
}

// startEncoder is a v2 prover for rr's run whose header is written.
func (rr *recordedRun) startEncoder(w *bytes.Buffer, wmin uint64, st *Statement) *prover {
	p := &prover{cells: newCellMemo()}
	p.startV2(w, ProveOptions{wmin: wmin})
	p.writeHeaderV2(st.Program, st.Inputs, st.Budget)
	p.v2.roots = append(p.v2.roots[:0], p.intern(rr.program), p.intern(noun.Subject(rr.inputs)))
	return p
}

// forgedStream is a forged certificate read on demand: the honest prefix,
// then the copied prover's encoding of the lie and every later call.
type forgedStream struct {
	prefix []byte
	// honest is the honest certificate; read is how much of it the
	// stream has delivered, and differs whether any byte differed.
	honest  []byte
	read    int
	differs bool
	p       *prover
	out     bytes.Buffer
	rr      *recordedRun
	next    int
	lieAt   int
	lie     noun.Noun
	calls   uint64
	done    bool
}

func (g *forgedStream) Read(b []byte) (int, error) {
	n, err := g.read1(b)
	if end := g.read + n; end > len(g.honest) || !bytes.Equal(b[:n], g.honest[g.read:end]) {
		g.differs = true
	}
	g.read += n
	if err == io.EOF && g.read != len(g.honest) {
		g.differs = true
	}
	return n, err
}

// forgery reports whether the stream, read to its end, was not the
// honest certificate.
func (g *forgedStream) forgery() bool { return g.differs || g.read != len(g.honest) }

func (g *forgedStream) read1(b []byte) (int, error) {
	if len(g.prefix) > 0 {
		n := copy(b, g.prefix)
		g.prefix = g.prefix[n:]
		return n, nil
	}
	for g.out.Len() == 0 && !g.done {
		if g.next < len(g.rr.events) {
			e := g.rr.events[g.next]
			r, form := e.result, e.form
			if g.next == g.lieAt {
				r, form = g.lie, lieForm(form)
			}
			if err := g.p.exitResultV2(form, r, e.depth); err != nil {
				return 0, err
			}
			g.next++
			if err := g.p.flushV2(); err != nil {
				return 0, err
			}
			continue
		}
		g.p.calls = g.calls
		if err := g.p.finishV2(&g.rr.st); err != nil {
			return 0, err
		}
		g.done = true
	}
	if g.out.Len() == 0 {
		return 0, io.EOF
	}
	return g.out.Read(b)
}

// cloneProverV2 copies a v2 prover's state (its memo, a cache, starts
// empty), writing to w.
func cloneProverV2(p *prover, w io.Writer) *prover {
	t := p.t
	g := t.gc
	ct := &table{
		head: slices.Clone(t.head), tail: slices.Clone(t.tail), val: slices.Clone(t.val),
		small: t.small, atoms: cloneIndex(t.atoms), pairs: cloneIndex(t.pairs),
		bound: slices.Clone(t.bound), bflags: slices.Clone(t.bflags),
		gc: &tableGC{free: slices.Clone(g.free), ext: slices.Clone(g.ext), ids: slices.Clone(g.ids),
			slots: slices.Clone(g.slots), next: g.next},
	}
	s := p.v2
	return &prover{t: ct, cells: newCellMemo(), calls: p.calls, maxBytes: p.maxBytes, v2: &proverV2{
		w: w, buf: make([]byte, 0, cap(s.buf)), roots: slices.Clone(s.roots), depths: slices.Clone(s.depths),
		threshold: s.threshold, wmin: s.wmin,
	}}
}

func cloneIndex(x idIndex) idIndex {
	x.slots = slices.Clone(x.slots)
	return x
}

// exitResultV2 is the prover's Exit (v2) for a result given without its
// formula (a lie among them), written in form: the result is interned,
// never derived from the children's, so that the encoding says what the
// test wrote.
func (p *prover) exitResultV2(form int, result noun.Noun, depth int) error {
	p.calls++
	p.emptyMemoIfDue(p.censuses) // no machine: no census
	return p.recordV2(p.writeResultRefV2(form, result), depth)
}

// recordV2 keeps the slot id of the result of a call at depth among the
// roots and then does what afterRecordV2 does: Exit's second half, for
// a test that writes a result its own way.
func (p *prover) recordV2(id uint32, depth int) error {
	p.v2.keepRootV2(id, int32(depth))
	return p.afterRecordV2()
}
