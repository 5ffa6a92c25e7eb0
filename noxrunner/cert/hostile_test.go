package cert

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// allocated is how many bytes f allocates (on every goroutine).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// quoteJob is the job of hostile.QuoteProgram under budget.
func quoteJob(t testing.TB, budget uint64) Expect {
	return Expect{Program: noun.AppendTokens(nil, parse(t, hostile.QuoteProgram)), Output: []uint64{0}, Budget: budget}
}

// TestNestedResultFailsAtOnce rebuilds the first attack of issue #16: a
// certificate of one quote step whose result defines 16 Mi nested pairs
// (32 MiB) before the rule could look at it, and the variant that leaves
// all of them pending. Both must be refused without building anything:
// by the witness's size when the statement is honest (one call), and at
// the result's first byte when the statement claims enough calls for the
// size to pass.
func TestNestedResultFailsAtOnce(t *testing.T) {
	const budget = 1_000_000
	exp := quoteJob(t, budget)
	// As built: one call cannot disclose 32 MiB.
	raw := hostile.NestedResult(hostile.NestedPairs, budget)
	var err error
	alloc := allocated(func() { _, _, err = Verify(context.Background(), raw, exp, Bounds{}) })
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "cannot hold") || alloc > 64<<10 {
		t.Errorf("nested pairs: %v after %d bytes", err, alloc)
	}
	// With a statement that claims the whole budget as calls: the quote's
	// result must be a back-reference, and its first byte is a
	// definition.
	for name, raw := range map[string][]byte{
		"nested pairs":  hostile.NestedResultClaimingBudget(hostile.NestedPairs, budget),
		"pending stack": hostile.PendingStack(2*hostile.NestedPairs, budget),
	} {
		alloc = allocated(func() { _, _, err = Verify(context.Background(), raw, exp, Bounds{}) })
		if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "defines more nodes") || alloc > 4<<20 {
			t.Errorf("%s, claiming the budget: %v after %d bytes", name, err, alloc)
		}
		t.Logf("%s (%d bytes): %v, %d bytes allocated", name, len(raw), err, alloc)
	}
}

// TestResultsDefineOnlyWhatTheirRuleCan checks the per-step limits on
// new nodes: a cons result may define its one pair (from back-references
// only), a digest step its hash-data, arithmetic one atom; one more
// definition is refused where it is read.
func TestResultsDefineOnlyWhatTheirRuleCan(t *testing.T) {
	cases := []struct {
		program string
		inputs  []uint64
	}{
		{"[3 [[0 2] [0 6]]]", []uint64{4, 9}}, // a new pair
		{"[15 [0 2]]", []uint64{4}},           // a new hash-data: 7 nodes
		{"[0 0]", []uint64{4}},                // the same for axis 0
		{"[5 [[0 2] [0 6]]]", []uint64{4, 9}}, // a new atom
		{"[8 [0 2]]", []uint64{4}},            // a new atom, checked by one multiplication
	}
	for _, c := range cases {
		run := prove(t, c.program, c.inputs, 1000)
		good := run.Certificate
		exp := Expect{Program: run.Statement.Program, Inputs: c.inputs, Budget: 1000}
		if _, _, err := Verify(context.Background(), good, exp, Bounds{}); err != nil {
			t.Fatalf("%s: %v", c.program, err)
		}
		// The last call is the root; its result is the tape's tail.
		// Replace the result with one that wraps it in one more pair
		// definition: [result result'] where the extra node is new.
		st, _ := ReadStatement(good)
		head := len(appendStatement(nil, st))
		r := &reader{b: good, pos: head}
		r.uvarint()
		// Find the start of the last reference by re-reading the
		// witness with a reader: every reference but the last.
		starts := refStarts(t, good[r.pos:])
		last := r.pos + starts[len(starts)-1]
		bad := append(append(append([]byte(nil), good[:last]...), refPair), good[last:]...)
		bad = append(bad, refBack) // [result result]: the newest node, twice
		_, _, err := Verify(context.Background(), bad, exp, Bounds{})
		if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "defines more nodes") {
			t.Errorf("%s: one definition too many: %v", c.program, err)
		}
	}
}

// refStarts returns the offset of each reference in a witness tape.
func refStarts(t testing.TB, tape []byte) []int {
	t.Helper()
	r := &reader{b: tape}
	var starts []int
	need := 0 // references still to read in the current one
	for r.pos < len(tape) {
		if need == 0 {
			starts = append(starts, r.pos)
			need = 1
		}
		switch x := r.uvarint(); x {
		case refPair: // one reference for two
			need++
			continue
		case refAtom:
			r.uvarint()
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		need--
	}
	return starts
}

// TestWitnessSizeFollowsTheStatement: the call count must not exceed the
// reductions (each call costs at least one), and the witness must fit
// the calls (at least one byte, at most MaxStepBytes each), all checked
// before the first step.
func TestWitnessSizeFollowsTheStatement(t *testing.T) {
	run := prove(t, rich, []uint64{7, 11}, 10_000)
	st, _ := ReadStatement(run.Certificate)
	exp := expectOf(st)
	head := len(appendStatement(nil, st))
	r := &reader{b: run.Certificate, pos: head}
	calls := r.uvarint()
	tape := run.Certificate[r.pos:]
	withCount := func(n uint64, tape []byte) []byte {
		return append(appendUvarint(appendStatement(nil, st), n), tape...)
	}
	for name, b := range map[string][]byte{
		"more calls than reductions": withCount(st.Reductions+1, tape),
		"fewer bytes than calls":     withCount(calls, tape[:calls-1]),
		"more bytes than calls hold": withCount(calls, append(append([]byte(nil), tape...), make([]byte, int(calls)*MaxStepBytes)...)),
	} {
		if _, _, err := Verify(context.Background(), b, exp, Bounds{}); !errors.Is(err, ErrRejected) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestExpectationsFirst: a certificate for another job is refused on its
// statement alone, before a byte of its witness is read.
func TestExpectationsFirst(t *testing.T) {
	const budget = 1_000_000
	raw := hostile.NestedResultClaimingBudget(hostile.NestedPairs, budget)
	for name, exp := range map[string]Expect{
		"another program": {Program: noun.AppendTokens(nil, parse(t, "[1 1]")), Output: []uint64{0}, Budget: budget},
		"another input":   {Program: noun.AppendTokens(nil, parse(t, hostile.QuoteProgram)), Inputs: []uint64{1}, Budget: budget},
		"another output":  {Program: noun.AppendTokens(nil, parse(t, hostile.QuoteProgram)), Output: []uint64{1}, Budget: budget},
		"another budget":  {Program: noun.AppendTokens(nil, parse(t, hostile.QuoteProgram)), Output: []uint64{0}, Budget: budget + 1},
	} {
		var err error
		alloc := allocated(func() { _, _, err = Verify(context.Background(), raw, exp, Bounds{}) })
		if !errors.Is(err, ErrMismatch) || alloc > 64<<10 {
			t.Errorf("%s: %v after %d bytes", name, err, alloc)
		}
	}
}

// nodesOf finds the size of a certificate's node table: the smallest
// MaxNodes it verifies with.
func nodesOf(t testing.TB, b []byte) uint64 {
	t.Helper()
	st, err := ReadStatement(b)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := uint64(1), uint64(len(b))*MaxStepNodes+MaxProgramNodes+2*MaxInputs+1
	for lo < hi {
		mid := (lo + hi) / 2
		_, _, err := Verify(context.Background(), b, expectOf(st), Bounds{MaxNodes: mid})
		switch {
		case err == nil:
			hi = mid
		case errors.Is(err, ErrTooLarge):
			lo = mid + 1
		default:
			t.Fatal(err)
		}
	}
	return lo
}

// TestNodeTableBound: a verification with MaxNodes one below what the
// certificate defines fails with ErrTooLarge, one at it passes.
func TestNodeTableBound(t *testing.T) {
	for _, p := range []string{add2, rich, hashChain} {
		run := prove(t, p, []uint64{7, 11}, 1<<20)
		n := nodesOf(t, run.Certificate)
		st, _ := ReadStatement(run.Certificate)
		if _, _, err := Verify(context.Background(), run.Certificate, expectOf(st), Bounds{MaxNodes: n - 1}); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: MaxNodes %d of %d: %v", p, n-1, n, err)
		}
		if _, err := Prove(context.Background(), parse(t, p), []uint64{7, 11}, 1<<20, ProveOptions{MaxNodes: n - 1}); !errors.Is(err, reduce.ErrCellLimit) {
			t.Errorf("%s: proving with MaxNodes %d of %d: %v", p, n-1, n, err)
		}
		if _, err := Prove(context.Background(), parse(t, p), []uint64{7, 11}, 1<<20, ProveOptions{MaxBytes: uint64(len(run.Certificate) - 1)}); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: proving with MaxBytes %d of %d: %v", p, len(run.Certificate)-1, len(run.Certificate), err)
		}
	}
}

// TestVerifyMemoryPerNode holds NodeBytes to what verification allocates
// per table node, under the node bound a job's memory gives it (as the
// supervisor verifies), at GOMAXPROCS 1, 2 and 16, on the certificates
// that cost the most per node: hash-heavy (every leaf of a tree
// recursion hashes a distinct noun: a hash-data per call, and a digest
// per node), pair-heavy (the deep formula, a fresh pair per level),
// dense axis 0 (a million digest steps over a table of about a hundred
// nodes: the deferred checks must be charged to the nodes, not to the
// steps) and a shared operand (thousands of hashes whose operands share
// one long list: digests must be computed once, not once per core).
// Before the checks were deduplicated and the digests shared, the axis-0
// certificate allocated 12 bytes per step at any GOMAXPROCS, and the
// shared operand's grew with GOMAXPROCS to several times NodeBytes.
func TestVerifyMemoryPerNode(t *testing.T) {
	certs := []struct {
		name string
		raw  []byte
	}{
		{"hash tree", prove(t, hashTree, []uint64{11}, 1<<40).Certificate},
		{"deep cons", prove(t, hostile.DeepBranch(), []uint64{11}, 1<<40).Certificate},
		{"axis zero", hostile.AxisZero(axisZeroDoublings)},
		{"shared operand", hostile.SharedOperand(sharedListDoublings, sharedHashDoublings)},
	}
	for _, c := range certs {
		st, _ := ReadStatement(c.raw)
		n := tableSize(t, c.raw)
		for _, procs := range []int{1, 2, 16} {
			var err error
			old := runtime.GOMAXPROCS(procs)
			alloc := allocated(func() { _, _, err = Verify(context.Background(), c.raw, expectOf(st), Bounds{MaxNodes: n}) })
			runtime.GOMAXPROCS(old)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			t.Logf("%s at GOMAXPROCS %d: %d bytes, %d nodes, %d bytes allocated (%.0f per node)",
				c.name, procs, len(c.raw), n, alloc, float64(alloc)/float64(n))
			if alloc > n*NodeBytes {
				t.Errorf("%s at GOMAXPROCS %d: %d bytes allocated for %d nodes, over %d per node", c.name, procs, alloc, n, NodeBytes)
			}
		}
	}
}

// tableSize is the size of a certificate's node table: the smallest
// MaxNodes it verifies with (nodesOf finds it through the bound).
func tableSize(t testing.TB, b []byte) uint64 {
	t.Helper()
	st, err := ReadStatement(b)
	if err != nil {
		t.Fatal(err)
	}
	v := &verifier{ctx: context.Background(), r: &reader{b: b}, maxNodes: DefaultMaxNodes}
	if _, _, err := v.verify(expectOf(st)); err != nil {
		t.Fatal(err)
	}
	return uint64(v.t.len())
}

// hashTree recurses into two calls per level, 2^n leaves, each hashing a
// distinct noun (the path that led to it), and returns 0.
var hashTree = func() string {
	rec := func(b string) string {
		return "[2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] [3 [[1 " + b + "] [0 7]]]]]]] [0 2]]]"
	}
	f := "[4 [[9 [[0 6] [1 0]]] [[2 [[15 [0 7]] [1 [1 0]]]] [2 [[3 [" + rec("0") + " " + rec("1") + "]] [1 [1 0]]]]]]]"
	return "[2 [[3 [[1 " + f + "] [3 [[0 2] [1 0]]]]] [1 " + f + "]]]"
}()

// TestDeepFormulasDoNotRecurse rebuilds the second attack of issue #16 at
// a million levels (a hundred thousand under -race, scale_test.go) with
// the goroutine stack capped (16 MiB, 1 MiB), which any walk that
// recursed once per level would overflow (a fatal error, not a failure a
// test could catch): the VM ends the compose variant with Malformed at
// the depth limit, the branch variant proves and verifies, and a
// certificate that claims the compose variant succeeded (every step
// before the deep one valid) is rejected at the depth limit.
func TestDeepFormulasDoNotRecurse(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: proves and verifies formulas millions of cells deep")
	}
	defer debug.SetMaxStack(debug.SetMaxStack(deepMaxStack))
	const n = deepDoublings
	ctx := context.Background()
	budget := uint64(1 << 40)
	inputs := []uint64{n}

	compose := parse(t, hostile.DeepCompose())
	out, err := reduce.New(reduce.Config{Provider: reduce.Public{}}).Reduce(ctx, noun.Subject(inputs), compose, budget)
	if err != nil || out.Status != reduce.Error || out.Kind != reduce.Malformed {
		t.Fatalf("compose variant: %+v %v", out, err)
	}

	branch := hostile.DeepBranch()
	run := prove(t, branch, inputs, budget)
	st, checked, err := Verify(ctx, run.Certificate, expectOf(&run.Statement), Bounds{})
	if err != nil || !checked.Program || len(st.Outputs) != 1 || st.Outputs[0] != hostile.DeepBranchResult {
		t.Fatalf("branch variant: %+v %v", st, err)
	}

	// The compose variant's valid prefix: every result the run
	// disclosed before its deep step failed, under a statement that
	// claims success.
	p, m := newProver(ProveOptions{})
	p.intern(compose)
	p.intern(noun.Subject(inputs))
	if out, err := m.Reduce(ctx, noun.Subject(inputs), compose, budget); err != nil || out.Status != reduce.Error {
		t.Fatalf("traced compose variant: %+v %v", out, err)
	}
	claim := Statement{Program: noun.AppendTokens(nil, compose), Inputs: inputs, Outputs: []uint64{0}, Reductions: budget, Budget: budget}
	// Room for the calls the walk enters on the way down (a byte each).
	forged := append(appendUvarint(appendStatement(nil, &claim), p.calls+2*DepthLimit), p.witness()...)
	forged = append(forged, make([]byte, 2*DepthLimit)...)
	_, _, err = Verify(ctx, forged, expectOf(&claim), Bounds{})
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "depth limit") {
		t.Fatalf("forged compose certificate: %v", err)
	}
	t.Logf("%s: compose Malformed, branch proved (%d bytes) and verified, forged prefix (%d bytes): %v",
		hostile.Describe(n), len(run.Certificate), len(forged), err)
}

// TestVerifyStopsWithItsContext: a cancelled context ends a verification
// with the context's error, not a verdict.
func TestVerifyStopsWithItsContext(t *testing.T) {
	run := prove(t, hashList, nil, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Verify(ctx, run.Certificate, expectOf(&run.Statement), Bounds{})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrRejected) {
		t.Fatalf("cancelled verification: %v", err)
	}
}
