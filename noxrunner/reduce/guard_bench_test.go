package reduce_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/vectors"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// guardCells is the cell bound the worker gives a job under 64 MiB.
const guardCells = (32 << 20) / reduce.CellBytes

// BenchmarkGuardLoopsGroup measures what the cell guard costs per
// reduction on the loops group: each iteration runs the whole group twice,
// once without a bound and once with the worker's bound for a 64 MiB job,
// back to back (the order alternating), so that both see the same load.
// It reports both times per reduction (the 10th percentile of the
// iterations: the ones that ran alone on a shared machine) and guard-%,
// the median of the iterations' own ratios.
func BenchmarkGuardLoopsGroup(b *testing.B) {
	all, err := vectors.Load()
	if err != nil {
		b.Fatal(err)
	}
	type parsed struct {
		object, formula noun.Noun
		budget          uint64
	}
	var cases []parsed
	var steps uint64
	ctx := context.Background()
	for _, c := range vectors.Group(all, "loops") {
		p := parsed{mustParse(b, c.Object), mustParse(b, c.Formula), c.Budget}
		m := reduce.New(reduce.Config{})
		m.Reduce(ctx, p.object, p.formula, p.budget)
		steps += m.Stats().Steps
		cases = append(cases, p)
	}
	group := func(maxCells uint64) time.Duration {
		t0 := time.Now()
		for _, c := range cases {
			m := reduce.New(reduce.Config{MaxCells: maxCells})
			m.Reduce(ctx, c.object, c.formula, c.budget)
		}
		return time.Since(t0)
	}
	sideBySide(b, steps, func() time.Duration { return group(0) }, func() time.Duration { return group(guardCells) })
}

// BenchmarkGuardSpin is the same comparison on one long run of a loop
// that builds a pair per call and holds almost none (2^16 calls of
// F(n) = F(n−1) + F(n−1) on [F n]): the guard takes its censuses here.
func BenchmarkGuardSpin(b *testing.B) {
	const f = "[4 [[9 [[0 3] [1 0]]] [[1 0] [5 [[2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]] [2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]]]]]]]"
	object, formula := mustParse(b, "["+f+" 16]"), mustParse(b, f)
	ctx := context.Background()
	var steps uint64
	run := func(maxCells uint64) time.Duration {
		m := reduce.New(reduce.Config{MaxCells: maxCells})
		t0 := time.Now()
		out, err := m.Reduce(ctx, object, formula, 1<<40)
		d := time.Since(t0)
		if err != nil || out.Status != reduce.OK {
			b.Fatalf("spin: %+v %v", out, err)
		}
		steps = m.Stats().Steps
		return d
	}
	run(0)
	sideBySide(b, steps, func() time.Duration { return run(0) }, func() time.Duration { return run(guardCells) })
}

// sideBySide runs off and on once each per iteration, alternating which
// goes first, and reports their times per reduction and the guard's cost.
func sideBySide(b *testing.B, steps uint64, off, on func() time.Duration) {
	var tOff, tOn, ratio []float64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		var dOff, dOn time.Duration
		if i%2 == 0 {
			dOff, dOn = off(), on()
		} else {
			dOn, dOff = on(), off()
		}
		tOff = append(tOff, float64(dOff.Nanoseconds())/float64(steps))
		tOn = append(tOn, float64(dOn.Nanoseconds())/float64(steps))
		ratio = append(ratio, float64(dOn)/float64(dOff))
	}
	b.StopTimer()
	b.ReportMetric(quantile(tOff, 0.1), "off-ns/reduction")
	b.ReportMetric(quantile(tOn, 0.1), "on-ns/reduction")
	b.ReportMetric(100*(quantile(ratio, 0.5)-1), "guard-%")
}

func quantile(x []float64, q float64) float64 {
	if len(x) == 0 {
		return 0
	}
	slices.Sort(x)
	return x[int(q*float64(len(x)-1))]
}
