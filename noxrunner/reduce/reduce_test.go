package reduce_test

import (
	"context"
	"errors"
	"runtime/debug"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

func mustParse(t testing.TB, s string) noun.Noun {
	t.Helper()
	n, err := noun.Parse(s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return n
}

func run(t testing.TB, cfg reduce.Config, object, formula string, budget uint64) (reduce.Outcome, error) {
	t.Helper()
	return reduce.New(cfg).Reduce(context.Background(), mustParse(t, object), mustParse(t, formula), budget)
}

// expectation is written compactly: "ok RESULT REMAINING", "halt N", "error KIND".
type spec struct {
	object, formula string
	budget          uint64
	status          reduce.Status
	result          string
	remaining       uint64
	kind            reduce.ErrorKind
}

func check(t *testing.T, c spec) {
	t.Helper()
	out, err := run(t, reduce.Config{}, c.object, c.formula, c.budget)
	if err != nil {
		t.Fatalf("%s: aborted: %v", c.formula, err)
	}
	if out.Status != c.status {
		t.Fatalf("%s budget %d: status %s, want %s (%+v)", c.formula, c.budget, out.Status, c.status, out)
	}
	switch c.status {
	case reduce.OK:
		if out.Result.String() != c.result || out.Remaining != c.remaining {
			t.Fatalf("%s budget %d: ok %s rem %d, want %s rem %d", c.formula, c.budget, out.Result, out.Remaining, c.result, c.remaining)
		}
	case reduce.Halt:
		if out.Remaining != c.remaining {
			t.Fatalf("%s budget %d: halt %d, want halt %d", c.formula, c.budget, out.Remaining, c.remaining)
		}
	case reduce.Error:
		if out.Kind != c.kind {
			t.Fatalf("%s budget %d: error %s, want %s", c.formula, c.budget, out.Kind, c.kind)
		}
	}
}

// The worked examples and the reservation-rule cases of the spec (§5.4,
// §5.6), which are observable only in failures.
func TestSpecExamples(t *testing.T) {
	for _, c := range []spec{
		{"[1 2]", "[5 [[0 2] [0 3]]]", 100, reduce.OK, "3", 97, 0},
		{"42", "[1 7]", 10, reduce.OK, "7", 9, 0},
		{"[1 2]", "[3 [[0 2] [0 3]]]", 100, reduce.OK, "[1 2]", 97, 0},
		{"[1 2]", "[4 [[9 [[0 2] [0 3]]] [[1 100] [1 200]]]]", 100, reduce.OK, "200", 95, 0},
		{"0", "[8 [1 2]]", 100, reduce.OK, "9223372034707292161", 35, 0},
		{"0", "[8 [1 0]]", 100, reduce.Error, "", 0, reduce.InvZero},
		{"0", "[2 [[1 5] [1 [5 [[0 1] [0 1]]]]]]", 100, reduce.OK, "10", 94, 0},
		{"0", "[16 [[1 1] [1 0]]]", 100, reduce.Halt, "", 98, 0},
		// Reservation: an unknown tag reached through a reserved child
		// halts with 0 instead of being Malformed.
		{"0", "[5 [[99 0] [1 1]]]", 100, reduce.Halt, "", 0, 0},
		{"0", "[4 [[1 0] [[99 0] [1 5]]]]", 100, reduce.Halt, "", 0, 0},
		{"0", "[5 [[99 0] [8 [1 1]]]]", 50, reduce.Error, "", 0, reduce.Malformed},
		// Halt values are local.
		{"0", "[8 [1 2]]", 64, reduce.Halt, "", 0, 0},
		{"0", "[8 [1 2]]", 63, reduce.Halt, "", 63, 0},
		{"0", "[10 [[1 1] [1 2]]]", 63, reduce.Halt, "", 63, 0},
		{"0", "[10 [[1 1] [1 2]]]", 65, reduce.Halt, "", 0, 0},
		{"0", "[10 [[1 1] [1 2]]]", 66, reduce.OK, "0", 0, 0},
		// Ordering: malformed formulas cost nothing, unknown tags cost 1.
		{"0", "7", 0, reduce.Error, "", 0, reduce.Malformed},
		{"0", "[[1 2] 0]", 0, reduce.Error, "", 0, reduce.Malformed},
		{"0", "[99 0]", 0, reduce.Halt, "", 0, 0},
		{"0", "[99 0]", 1, reduce.Error, "", 0, reduce.Malformed},
		{"0", "[1 7]", 0, reduce.Halt, "", 0, 0},
		// Look with the null provider.
		{"0", "[17 [[1 0] [1 0]]]", 100, reduce.Error, "", 0, reduce.Unavailable},
		{"0", "[17 [[1 [1 2]] [1 0]]]", 100, reduce.Error, "", 0, reduce.TypeError},
		// Bitwise and comparisons.
		{"0", "[14 [[1 1] [1 32]]]", 100, reduce.OK, "0", 66, 0},
		{"0", "[14 [[1 3] [1 4294967296]]]", 100, reduce.Error, "", 0, reduce.TypeError},
		{"0", "[13 [1 0]]", 100, reduce.OK, "4294967295", 67, 0},
		{"0", "[9 [[1 [1 2]] [1 [1 2]]]]", 100, reduce.OK, "0", 97, 0},
		{"[[1 2] [3 4]]", "[0 6]", 10, reduce.OK, "3", 9, 0},
		{"42", "[0 2]", 10, reduce.Error, "", 0, reduce.AxisError},
	} {
		check(t, c)
	}
}

const countdown = "[4 [[9 [[0 3] [1 0]]] [[1 0] [2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]]]]]"

// The depth limit is a semantic limit: the standard countdown loop runs
// 498 iterations and fails on 499 (§5.7).
func TestDepthLimitEdges(t *testing.T) {
	loop := func(n string) string { return "[" + countdown + " " + n + "]" }
	out, err := run(t, reduce.Config{}, loop("498"), "[2 [[0 1] [0 2]]]", 1_000_000)
	if err != nil || out.Status != reduce.OK || out.Cost(1_000_000) != 11*498+8 {
		t.Fatalf("n=498: %+v %v (cost %d)", out, err, out.Cost(1_000_000))
	}
	out, err = run(t, reduce.Config{}, loop("499"), "[2 [[0 1] [0 2]]]", 1_000_000)
	if err != nil || out.Status != reduce.Error || out.Kind != reduce.Malformed {
		t.Fatalf("n=499: %+v %v", out, err)
	}
	// A larger configured limit lets the same loop finish.
	out, err = run(t, reduce.Config{DepthLimit: 10_000}, loop("499"), "[2 [[0 1] [0 2]]]", 1_000_000)
	if err != nil || out.Status != reduce.OK || out.Cost(1_000_000) != 11*499+8 {
		t.Fatalf("n=499 with limit 10000: %+v %v", out, err)
	}
	// The depth check comes before everything, even with budget 0.
	out, err = run(t, reduce.Config{DepthLimit: 1}, "0", "[5 [[1 1] [5 [[1 1] [1 1]]]]]", 0)
	if err != nil || out.Status != reduce.Halt {
		t.Fatalf("budget 0 at root: %+v %v", out, err)
	}
	out, err = run(t, reduce.Config{DepthLimit: 1}, "0", "[5 [[1 1] [5 [[1 1] [1 1]]]]]", 100)
	if err != nil || out.Status != reduce.Error || out.Kind != reduce.Malformed {
		t.Fatalf("depth 2 with limit 1: %+v %v", out, err)
	}
}

func TestPublicProviderRefusesBeforeCharging(t *testing.T) {
	for _, f := range []string{"[16 [[1 1] [1 0]]]", "[17 [[1 0] [1 0]]]", "[5 [[1 1] [16 [[1 1] [1 0]]]]]"} {
		for _, budget := range []uint64{0, 100} {
			if budget == 0 && f[1] == '5' {
				continue // the add halts before the call is reached
			}
			_, err := run(t, reduce.Config{Provider: reduce.Public{}}, "0", f, budget)
			var use *reduce.UnsupportedServiceError
			if !errors.As(err, &use) || !errors.Is(err, reduce.ErrUnsupportedService) {
				t.Errorf("%s budget %d: %v, want UnsupportedService", f, budget, err)
			}
		}
	}
	// Quoted 16 and 17 are data, and an unreached call is fine.
	out, err := run(t, reduce.Config{Provider: reduce.Public{}}, "0", "[4 [[1 1] [[16 [[1 1] [1 0]]] [1 [16 17]]]]]", 100)
	if err != nil || out.Status != reduce.OK || out.Result.String() != "[16 17]" {
		t.Fatalf("unreached call: %+v %v", out, err)
	}
	// A malformed call formula is Malformed before the profile is asked.
	_, err = run(t, reduce.Config{Provider: reduce.Public{}}, "0", "[[16 0] 0]", 100)
	if err != nil {
		t.Fatalf("malformed pair head must not reach the provider: %v", err)
	}
}

type witnessProvider struct{ w noun.Noun }

func (witnessProvider) Admit(uint64) error { return nil }
func (p witnessProvider) Call(tag uint64, o noun.Noun) (noun.Noun, bool, error) {
	return p.w, true, nil
}
func (witnessProvider) Look(root [4]uint64, ns, key uint64) (uint64, bool, error) {
	return root[0] + ns + key, true, nil
}

func TestCallAndLookProviders(t *testing.T) {
	cfg := reduce.Config{Provider: witnessProvider{w: noun.Atom(7)}}
	// The check formula sees [w o]; [9 [[0 2] [1 7]]] checks w == 7 → 0.
	out, err := run(t, cfg, "0", "[16 [[1 1] [9 [[0 2] [1 7]]]]]", 100)
	if err != nil || out.Status != reduce.OK || out.Result.String() != "7" {
		t.Fatalf("accepted call: %+v %v", out, err)
	}
	out, err = run(t, cfg, "0", "[16 [[1 1] [9 [[0 2] [1 8]]]]]", 100)
	if err != nil || out.Status != reduce.Error || out.Kind != reduce.CallRejected {
		t.Fatalf("rejected call: %+v %v", out, err)
	}
	out, err = run(t, cfg, "[[1 [2 [3 4]]] 9]", "[17 [[1 2] [1 3]]]", 100)
	if err != nil || out.Status != reduce.OK || out.Result.String() != "6" {
		t.Fatalf("look: %+v %v", out, err)
	}
	out, err = run(t, cfg, "[[1 [2 [3 4]]] 9]", "[17 [[1 10] [1 3]]]", 100)
	if err != nil || out.Kind != reduce.Unavailable {
		t.Fatalf("look ns 10: %+v %v", out, err)
	}
}

// An endless loop with a huge budget stops within milliseconds of
// cancellation.
func TestCancellationIsPrompt(t *testing.T) {
	// [2 [[0 1] [0 1]]] applied to itself never ends; depth grows by one per
	// round, so give it a depth limit it cannot reach.
	self := "[2 [[0 1] [0 1]]]"
	m := reduce.New(reduce.Config{DepthLimit: 1 << 30})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Reduce(ctx, mustParse(t, self), mustParse(t, self), ^uint64(0))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, reduce.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("want cancellation, got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reduction did not stop after cancellation")
	}
}

func TestCellAndStepLimits(t *testing.T) {
	// F turns the subject [F x] into [F [x x]] and loops on it forever.
	f := "[2 [[3 [[0 2] [3 [[0 3] [0 3]]]]] [0 2]]]"
	m := reduce.New(reduce.Config{MaxCells: 1000, DepthLimit: 1 << 20})
	_, err := m.Reduce(context.Background(), mustParse(t, "["+f+" 1]"), mustParse(t, "[2 [[0 1] [0 2]]]"), ^uint64(0))
	if !errors.Is(err, reduce.ErrCellLimit) {
		t.Fatalf("want cell limit, got %v", err)
	}
	self := "[2 [[0 1] [0 1]]]"
	m = reduce.New(reduce.Config{MaxSteps: 5000, DepthLimit: 1 << 20})
	_, err = m.Reduce(context.Background(), mustParse(t, self), mustParse(t, self), ^uint64(0))
	if !errors.Is(err, reduce.ErrStepLimit) {
		t.Fatalf("want step limit, got %v", err)
	}
}

func TestAtomArithmeticDoesNotAllocate(t *testing.T) {
	obj := mustParse(t, "[5 7]")
	f := mustParse(t, "[7 [[5 [[0 2] [0 3]]] [6 [[0 3] [1 1]]]]]")
	m := reduce.New(reduce.Config{})
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		if out, err := m.Reduce(ctx, obj, f, 1000); err != nil || out.Status != reduce.OK {
			t.Fatal(out, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run of atom arithmetic, want 0", allocs)
	}
}

// cost + remaining = budget for every successful run, and a run with a
// budget one short of its cost halts.
func TestBudgetConservation(t *testing.T) {
	f := mustParse(t, "[2 [[1 5] [1 [15 [5 [[0 1] [0 1]]]]]]]")
	m := reduce.New(reduce.Config{})
	out, err := m.Reduce(context.Background(), noun.Zero, f, 1000)
	if err != nil || out.Status != reduce.OK {
		t.Fatal(out, err)
	}
	cost := out.Cost(1000)
	for _, b := range []uint64{cost, cost + 1, 1 << 40} {
		o, _ := m.Reduce(context.Background(), noun.Zero, f, b)
		if o.Status != reduce.OK || o.Cost(b) != cost {
			t.Fatalf("budget %d: %+v", b, o)
		}
	}
	if o, _ := m.Reduce(context.Background(), noun.Zero, f, cost-1); o.Status != reduce.Halt {
		t.Fatalf("budget cost-1: %+v", o)
	}
}

// A single step can be long: eq of two large fresh nouns digests every
// cell (one permutation each, ~5 µs). Cancellation must still end the run
// within milliseconds, in the middle of that digest.
func TestCancellationDuringALongDigest(t *testing.T) {
	// grow(n) = [grow(n-1) grow(n-1)], 2^n fresh cells; the formula
	// compares two separately built grow(17) trees: ~10^6 permutations.
	grow := "[4 [[9 [[0 3] [1 0]]] [[1 0] [3 [[2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]] [2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]]]]]]]"
	build := "[2 [[3 [[1 " + grow + "] [1 17]]] [1 " + grow + "]]]"
	f := mustParse(t, "[9 ["+build+" "+build+"]]")
	m := reduce.New(reduce.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Reduce(ctx, noun.Zero, f, 1<<40)
		done <- err
	}()
	// Let the trees be built and the digest start (building takes far less
	// than digesting).
	time.Sleep(300 * time.Millisecond)
	cancel()
	start := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, reduce.ErrCancelled) {
			t.Fatalf("want cancellation, got %v", err)
		}
		// Normally within a millisecond; loose for a loaded machine: the
		// digest not checking at all would run for many seconds.
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("stopped %s after cancellation", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the digest did not notice the cancellation")
	}
}

// TestDepthLimitIsCapped: a depth limit above MaxDepthLimit is lowered
// to it, so that the evaluator's recursion (one Go frame set per level)
// ends with Malformed long before the stack could overflow, here under a
// 256 MiB stack cap (the runtime's default is 1 GB).
func TestDepthLimitIsCapped(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(256 << 20))
	deep := func(levels int) noun.Noun {
		f := noun.Cons(noun.Atom(reduce.TagQuote), noun.Atom(2))
		for range levels {
			f = noun.Cons(noun.Atom(reduce.TagInv), f)
		}
		return f
	}
	m := reduce.New(reduce.Config{DepthLimit: 1 << 30})
	for _, c := range []struct {
		levels int
		want   reduce.Status
	}{{reduce.MaxDepthLimit, reduce.OK}, {reduce.MaxDepthLimit + 1, reduce.Error}} {
		out, err := m.Reduce(context.Background(), noun.Zero, deep(c.levels), 1<<62)
		if err != nil || out.Status != c.want || (c.want == reduce.Error && out.Kind != reduce.Malformed) {
			t.Fatalf("%d levels: %+v %v", c.levels, out, err)
		}
	}
}

// DepthExceeded tells the depth limit's Malformed from a malformed
// formula's (the outcomes are the same), and is the last run's alone.
func TestDepthExceededSaysWhichMalformed(t *testing.T) {
	m := reduce.New(reduce.Config{})
	reduceOnce := func(object, formula string) reduce.Outcome {
		t.Helper()
		out, err := m.Reduce(context.Background(), mustParse(t, object), mustParse(t, formula), 1_000_000)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	deep := "[" + countdown + " 499]"
	if out := reduceOnce(deep, "[2 [[0 1] [0 2]]]"); out.Kind != reduce.Malformed || !m.DepthExceeded() {
		t.Fatalf("past the depth limit: %+v, DepthExceeded %v", out, m.DepthExceeded())
	}
	if out := reduceOnce("0", "[[1 0] 0]"); out.Status != reduce.Error || out.Kind != reduce.Malformed || m.DepthExceeded() {
		t.Fatalf("a formula whose head is a pair: %+v, DepthExceeded %v", out, m.DepthExceeded())
	}
	reduceOnce(deep, "[2 [[0 1] [0 2]]]")
	if out := reduceOnce("["+countdown+" 3]", "[2 [[0 1] [0 2]]]"); out.Status != reduce.OK || m.DepthExceeded() {
		t.Fatalf("a run after a deep one: %+v, DepthExceeded %v", out, m.DepthExceeded())
	}
}
