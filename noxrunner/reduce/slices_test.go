package reduce_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// doubledAdd builds at run time the formula F_k (F_0 = [1 1], F_j+1 =
// [5 [F_j F_j]]) and runs it on 0: 2^(k+1)-1 steps, the atom 2^k, no
// pair built by the run itself but the formulas'.
func doubledAdd(k int) string {
	d := "[3 [[1 5] [3 [[0 1] [0 1]]]]]"
	g := d
	for range k - 1 {
		g = "[2 [" + g + " [1 " + d + "]]]"
	}
	return "[2 [[1 0] [2 [[1 [1 1]] [1 " + g + "]]]]]"
}

// TestOnStepLimitGoesOn: with OnStepLimit a run past MaxSteps is paused
// in the hook, not aborted, and goes on with the steps it returns: run
// in slices of 1,000 steps it ends with the same outcome and steps as
// in one go, each pause within a poll of its limit. An error from the
// hook aborts the run with it; a limit that is not larger is the step
// limit. Before, there was no hook: MaxSteps always aborted.
func TestOnStepLimitGoesOn(t *testing.T) {
	f := mustParse(t, doubledAdd(14))
	whole := reduce.New(reduce.Config{})
	want, err := whole.Reduce(context.Background(), noun.Zero, f, 1<<30)
	if err != nil || want.Status != reduce.OK {
		t.Fatalf("%+v %v", want, err)
	}
	const slice = 1000
	var pauses []uint64
	limit := uint64(slice)
	m := reduce.New(reduce.Config{MaxSteps: limit, OnStepLimit: func(steps uint64) (uint64, error) {
		if steps <= limit || steps > limit+1024 {
			return 0, fmt.Errorf("paused at %d steps, the limit %d", steps, limit)
		}
		pauses = append(pauses, steps)
		limit += slice
		return limit, nil
	}})
	got, err := m.Reduce(context.Background(), noun.Zero, f, 1<<30)
	if err != nil || got.Status != reduce.OK || !noun.Equal(got.Result, want.Result) || got.Remaining != want.Remaining {
		t.Fatalf("in slices: %+v %v, want %+v", got, err, want)
	}
	if s := m.Stats().Steps; s != whole.Stats().Steps {
		t.Fatalf("%d steps in slices, %d in one go", s, whole.Stats().Steps)
	}
	if n := uint64(len(pauses)); n < whole.Stats().Steps/slice-1 || n > whole.Stats().Steps/slice {
		t.Fatalf("%d pauses for %d steps", n, whole.Stats().Steps)
	}

	stop := errors.New("no more steps")
	m = reduce.New(reduce.Config{MaxSteps: slice, OnStepLimit: func(uint64) (uint64, error) { return 0, stop }})
	if _, err := m.Reduce(context.Background(), noun.Zero, f, 1<<30); !errors.Is(err, stop) {
		t.Fatalf("the hook's error: %v", err)
	}
	m = reduce.New(reduce.Config{MaxSteps: slice, OnStepLimit: func(steps uint64) (uint64, error) { return steps, nil }})
	if _, err := m.Reduce(context.Background(), noun.Zero, f, 1<<30); !errors.Is(err, reduce.ErrStepLimit) {
		t.Fatalf("a limit that is not larger: %v", err)
	}
}

// limiter is a provider whose call sets the run's limits.
type limiter struct {
	m                *reduce.Machine
	maxSteps, cells  uint64
	stepsAt, cellsAt uint64
}

func (*limiter) Admit(uint64) error                                   { return nil }
func (*limiter) Look([4]uint64, uint64, uint64) (uint64, bool, error) { return 0, false, nil }
func (l *limiter) Call(_ uint64, o noun.Noun) (noun.Noun, bool, error) {
	s := l.m.Stats()
	l.stepsAt, l.cellsAt = s.Steps, s.Cells
	l.m.SetLimits(l.maxSteps, l.cells)
	return noun.Zero, true, nil
}

// TestSetLimitsFromTheProvider: limits set while the run waits in its
// provider hold from there on: a bound on what the run holds (a host
// lowers it by the witnesses it hands the run), met within its slack,
// and steps.
func TestSetLimitsFromTheProvider(t *testing.T) {
	// Call, then build pairs without end: [F x] -> [F [x x]].
	grow := "[2 [[3 [[0 2] [3 [[0 3] [0 3]]]]] [0 2]]]"
	loop := "[2 [[1 [" + grow + " 1]] [1 [2 [[0 1] [0 2]]]]]]"
	f := "[3 [[16 [[1 1] [1 0]]] " + loop + "]]"
	l := &limiter{cells: 100}
	l.m = reduce.New(reduce.Config{Provider: l, DepthLimit: 1 << 20})
	_, err := l.m.Reduce(context.Background(), noun.Zero, mustParse(t, f), ^uint64(0))
	if !errors.Is(err, reduce.ErrCellLimit) || l.stepsAt == 0 {
		t.Fatalf("cells limited from the call: %v (call at %d steps)", err, l.stepsAt)
	}
	if st := l.m.Stats(); st.Held <= 100 || st.Cells > l.cellsAt+100+100/4+1 {
		t.Fatalf("stopped holding %d cells, %d built after the call, with 100 allowed from it", st.Held, st.Cells-l.cellsAt)
	}
	l = &limiter{maxSteps: 3000, cells: 1 << 30}
	l.m = reduce.New(reduce.Config{Provider: l, DepthLimit: 1 << 20})
	_, err = l.m.Reduce(context.Background(), noun.Zero, mustParse(t, f), ^uint64(0))
	if !errors.Is(err, reduce.ErrStepLimit) || l.m.Stats().Steps > 3000+1024 {
		t.Fatalf("steps limited from the call: %v after %d steps", err, l.m.Stats().Steps)
	}
}
