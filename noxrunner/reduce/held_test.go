package reduce_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// On the subject [F n], spinF computes F(n) = 0 if n = 0 else F(n−1) +
// F(n−1): 2^(n+1) − 1 calls, each building its subject, none holding
// more than the path to it. growF computes F(n) = 0 if n = 0 else
// [F(n−1) F(n−1)]: every pair of its result is fresh, 2^n − 1 of them.
// (integration/testdata has both.)
const (
	spinF = "[4 [[9 [[0 3] [1 0]]] [[1 0] [5 [[2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]] [2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]]]]]]]"
	growF = "[4 [[9 [[0 3] [1 0]]] [[1 0] [3 [[2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]] [2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]]]]]]]"
)

// runOn is the formula that runs F on [F n], whatever its subject.
func runOn(f string, n int) string {
	return fmt.Sprintf("[2 [[3 [[1 %s] [1 %d]]] [1 %s]]]", f, n, f)
}

func reduceWith(t *testing.T, cfg reduce.Config, formula string) (reduce.Outcome, reduce.Stats, error) {
	t.Helper()
	m := reduce.New(cfg)
	out, err := m.Reduce(context.Background(), noun.Zero, mustParse(t, formula), 1<<40)
	return out, m.Stats(), err
}

// TestChurnHoldsLittle: a run that builds far more pairs than its bound
// and drops them finishes; the bound is on what it holds. (Before the
// census, MaxCells bounded the pairs built, and this run stopped with
// ErrCellLimit after 16,384 of them.)
func TestChurnHoldsLittle(t *testing.T) {
	out, st, err := reduceWith(t, reduce.Config{MaxCells: 1 << 14}, runOn(spinF, 16))
	if err != nil || out.Status != reduce.OK {
		t.Fatalf("spin: %+v %v", out, err)
	}
	if st.Cells < 4<<14 || st.Censuses == 0 || st.Held > 1<<14 {
		t.Fatalf("spin built %d pairs, held %d at the last of %d censuses", st.Cells, st.Held, st.Censuses)
	}
	t.Logf("built %d pairs under a bound of %d; %d censuses, the last counted %d", st.Cells, 1<<14, st.Censuses, st.Held)
}

// TestGrowthStopsEarly: a run that holds what it builds stops soon after
// it holds more than its bound (a quarter of slack), at the same pair
// every time. growF's run holds a third of the pairs it builds (the
// result's; the two subjects a call builds are dropped when it returns),
// so it must stop before it has built three times the bound and its
// slack, and a little for the subjects on its path.
func TestGrowthStopsEarly(t *testing.T) {
	for _, limit := range []uint64{1000, 1 << 14, 1 << 18} {
		var first uint64
		for range 2 {
			_, st, err := reduceWith(t, reduce.Config{MaxCells: limit}, runOn(growF, 40))
			if !errors.Is(err, reduce.ErrCellLimit) {
				t.Fatalf("limit %d: %v", limit, err)
			}
			if st.Cells > 3*(limit+limit/4)+256 {
				t.Fatalf("limit %d: stopped after building %d pairs", limit, st.Cells)
			}
			if first != 0 && st.Cells != first {
				t.Fatalf("limit %d: stopped after %d pairs, then after %d", limit, first, st.Cells)
			}
			first = st.Cells
			t.Logf("limit %d: stopped after building %d pairs, the census counting %d", limit, st.Cells, st.Held)
		}
	}
}

// resultHeld is what the result of formula holds, in cells: a value X
// the held cases below keep or drop. (What X's run built is more: the
// subjects of its calls, which it dropped.)
func resultHeld(t *testing.T, formula string) uint64 {
	t.Helper()
	out, _, err := reduceWith(t, reduce.Config{}, formula)
	if err != nil || out.Status != reduce.OK {
		t.Fatalf("X: %+v %v", out, err)
	}
	var c noun.Census
	n, _ := c.Count([]noun.Noun{out.Result}, 1<<62, nil)
	return n
}

// heldCase is a program that holds a value X of about `built` pairs while
// it builds another as large, and its control, which lets X go first.
// (X holds about a third of the pairs its run builds.)
// Under a bound of 1.4 X the first must stop and the second finish: each
// fails if the machine stopped counting the root it exercises.
type heldCase struct {
	name            string
	holds, lets, gk string
}

func heldCases(k int) []heldCase {
	gk := runOn(growF, k)
	return []heldCase{
		// The first operand of a cons while the second is evaluated.
		{"binary", "[3 [" + gk + " " + gk + "]]", "[3 [[2 [" + gk + " [1 [1 0]]]] " + gk + "]]", gk},
		// The object of a compose while its formula runs.
		{"compose object", "[2 [" + gk + " [1 " + gk + "]]]", "[2 [[2 [" + gk + " [1 [1 0]]]] [1 " + gk + "]]]", gk},
		// The formula of a compose, built at run time with X in a
		// branch it does not take: [4 [[1 1] [[1 X] Gk]]].
		{"compose formula",
			"[2 [[1 0] [3 [[1 4] [3 [[1 [1 1]] [3 [[3 [[1 1] " + gk + "]] [1 " + gk + "]]]]]]]]]",
			"[2 [[1 0] [3 [[1 4] [3 [[1 [1 1]] [3 [[3 [[1 1] [1 0]]] [1 " + gk + "]]]]]]]]]", gk},
	}
}

func TestEveryRootIsCounted(t *testing.T) {
	for _, k := range []int{11, 14} {
		for _, c := range heldCases(k) {
			x := resultHeld(t, c.gk)
			limit := x * 14 / 10
			if _, st, err := reduceWith(t, reduce.Config{MaxCells: limit}, c.holds); !errors.Is(err, reduce.ErrCellLimit) {
				t.Errorf("k=%d %s: holding X (%d cells) under %d: %v, %+v", k, c.name, x, limit, err, st)
			}
			if out, st, err := reduceWith(t, reduce.Config{MaxCells: limit}, c.lets); err != nil || out.Status != reduce.OK {
				t.Errorf("k=%d %s: letting X (%d cells) go under %d: %v %v, %+v", k, c.name, x, limit, out.Status, err, st)
			}
		}
	}
}

// witness answers every call with its noun.
type witness struct{ w noun.Noun }

func (witness) Admit(uint64) error                                   { return nil }
func (p witness) Call(uint64, noun.Noun) (noun.Noun, bool, error)    { return p.w, true, nil }
func (witness) Look([4]uint64, uint64, uint64) (uint64, bool, error) { return 0, false, nil }

// TestCallSubjectIsCounted: a witness is held in the subject of the
// call's check while the check runs.
func TestCallSubjectIsCounted(t *testing.T) {
	gk := runOn(growF, 12)
	x := resultHeld(t, gk)
	big := noun.Zero
	for i := range x {
		big = noun.Cons(noun.Atom(i), big)
	}
	limit := x * 14 / 10
	// The check builds Y, then returns 0 (accepted).
	call := "[16 [[1 7] [2 [" + gk + " [1 [1 0]]]]]]"
	// (A witness makes the machine count at once: what it holds is no
	// longer bounded by what it built.)
	for _, c := range []struct {
		w    noun.Noun
		stop bool
	}{{big, true}, {noun.Atom(5), false}} {
		_, st, err := reduceWith(t, reduce.Config{MaxCells: limit, Provider: witness{c.w}}, call)
		if errors.Is(err, reduce.ErrCellLimit) != c.stop {
			t.Errorf("witness of %d pairs under %d: %v, %+v", x*uint64(boolInt(c.stop)), limit, err, st)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestLateTrackingCounts: under a large bound a run records its roots
// only once it has built trackAfter pairs; what its frames held before is
// counted as held, so the two-X program still stops.
func TestLateTrackingCounts(t *testing.T) {
	c := heldCases(16)[0]
	limit := resultHeld(t, c.gk) * 14 / 10
	if limit/16 < 1<<12 {
		t.Fatalf("bound %d is small enough to track from the start", limit)
	}
	if _, _, err := reduceWith(t, reduce.Config{MaxCells: limit}, c.holds); !errors.Is(err, reduce.ErrCellLimit) {
		t.Errorf("holding X under %d: %v", limit, err)
	}
	if out, _, err := reduceWith(t, reduce.Config{MaxCells: limit}, c.lets); err != nil || out.Status != reduce.OK {
		t.Errorf("letting X go under %d: %v %v", limit, out.Status, err)
	}
}
