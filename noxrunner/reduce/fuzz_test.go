package reduce_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// FuzzReduce: no panic, no run longer than its budget allows (every
// counted step charges at least 1), and on success the cost is exact:
// the same run with budget = cost succeeds with nothing left, and with a
// larger budget leaves exactly the surplus.
func FuzzReduce(f *testing.F) {
	seeds := []struct {
		o, f string
		b    uint16
	}{
		{"[1 2]", "[5 [[0 2] [0 3]]]", 100},
		{"0", "[2 [[1 5] [1 [5 [[0 1] [0 1]]]]]]", 100},
		{"[" + countdown + " 20]", "[2 [[0 1] [0 2]]]", 5000},
		{"0", "[8 [1 2]]", 64},
		{"0", "[15 [15 [1 0]]]", 60},
		{"[[1 2] [3 4]]", "[3 [[0 7] [9 [[0 2] [0 3]]]]]", 50},
		{"0", "[4 [[1 0] [[99 0] [1 5]]]]", 10},
	}
	for _, s := range seeds {
		f.Add(s.o, s.f, s.b)
	}
	f.Fuzz(func(t *testing.T, os, fs string, b16 uint16) {
		opt := noun.ParseOptions{MaxNodes: 4096}
		o, err := noun.ParseWith(os, opt)
		if err != nil {
			return
		}
		fm, err := noun.ParseWith(fs, opt)
		if err != nil {
			return
		}
		budget := uint64(b16)
		ctx := context.Background()
		cfg := reduce.Config{MaxSteps: budget + 2, MaxCells: 1 << 20}
		out, err := reduce.New(cfg).Reduce(ctx, o, fm, budget)
		if err != nil {
			if errors.Is(err, reduce.ErrStepLimit) {
				t.Fatalf("ran past its budget of %d", budget)
			}
			if errors.Is(err, reduce.ErrCellLimit) {
				return
			}
			t.Fatalf("unexpected abort: %v", err)
		}
		if out.Status != reduce.OK {
			return
		}
		if out.Remaining > budget {
			t.Fatalf("remaining %d > budget %d", out.Remaining, budget)
		}
		cost := out.Cost(budget)
		exact, err := reduce.New(cfg).Reduce(ctx, o, fm, cost)
		if err != nil || exact.Status != reduce.OK || exact.Remaining != 0 || !noun.Equal(exact.Result, out.Result) {
			t.Fatalf("budget = cost %d: %+v %v", cost, exact, err)
		}
		more, err := reduce.New(reduce.Config{MaxCells: 1 << 20}).Reduce(ctx, o, fm, cost+17)
		if err != nil || more.Status != reduce.OK || more.Remaining != 17 || !noun.Equal(more.Result, out.Result) {
			t.Fatalf("budget = cost+17: %+v %v", more, err)
		}
	})
}
