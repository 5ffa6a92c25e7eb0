package reduce_test

import (
	"context"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/vectors"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// referenceLoopsSeconds is the Rust reference's time for the 400-case loops
// group (244,889 reductions, one case per fresh arena) on this machine kind,
// as measured for the project; the reference cannot be built here, so the
// benchmark reports its own speed-up against this figure.
const referenceLoopsSeconds = 1.9

// BenchmarkLoopsGroup runs the whole loops group per iteration, parsing
// each case and using a fresh machine per case, like the reference.
func BenchmarkLoopsGroup(b *testing.B) {
	all, err := vectors.Load()
	if err != nil {
		b.Fatal(err)
	}
	cases := vectors.Group(all, "loops")
	ctx := context.Background()
	var steps uint64
	for _, c := range cases {
		m := reduce.New(reduce.Config{})
		m.Reduce(ctx, mustParse(b, c.Object), mustParse(b, c.Formula), c.Budget)
		steps += m.Stats().Steps
	}
	b.ResetTimer()
	for b.Loop() {
		for _, c := range cases {
			o, _ := noun.Parse(c.Object)
			f, _ := noun.Parse(c.Formula)
			m := reduce.New(reduce.Config{})
			m.Reduce(ctx, o, f, c.Budget)
		}
	}
	perGroup := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(steps)/perGroup, "reductions/s")
	b.ReportMetric(referenceLoopsSeconds/perGroup, "x-reference")
	b.ReportMetric(float64(steps), "reductions/group")
}

// loopBench runs a self-applying loop body n times per reduction (n below
// the depth limit for its shape) and reports reduce calls per second.
func loopBench(b *testing.B, object, formula string) {
	o, f := mustParse(b, object), mustParse(b, formula)
	m := reduce.New(reduce.Config{})
	ctx := context.Background()
	out, err := m.Reduce(ctx, o, f, 1<<40)
	if err != nil || out.Status != reduce.OK {
		b.Fatalf("loop does not finish: %+v %v", out, err)
	}
	steps := m.Stats().Steps
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.Reduce(ctx, o, f, 1<<40)
	}
	b.ReportMetric(float64(steps)*float64(b.N)/b.Elapsed().Seconds(), "reductions/s")
}

// countdownWith builds the standard countdown loop whose step also runs op
// on the counter: F = [4 [[9 [[0 3] [1 0]]] [[1 0] [2 [[3 [[0 2] STEP]] [0 2]]]]]]
// with STEP = [6 [[0 3] [1 1]]] wrapped around op's result being discarded
// by cons into the subject's garbage slot.
const (
	// Arithmetic: x ← (x·3 + 5) − x², carried beside the counter.
	arithLoop = "[[4 [[9 [[0 6] [1 0]]] [[0 7] [2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] [6 [[5 [[7 [[0 7] [1 3]]] [1 5]]] [7 [[0 7] [0 7]]]]]]]]] [0 2]]]]]] [300 9]]"
	// Hash: h ← hash(h) on every step.
	hashLoop = "[[4 [[9 [[0 6] [1 0]]] [[0 7] [2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] [15 [0 7]]]]]] [0 2]]]]]] [300 9]]"
	// Inverse: x ← inv(x + 1).
	invLoop = "[[4 [[9 [[0 6] [1 0]]] [[0 7] [2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] [8 [5 [[0 7] [1 1]]]]]]]] [0 2]]]]]] [300 9]]"
	apply   = "[2 [[0 1] [0 2]]]"
)

func BenchmarkArithmeticLoop(b *testing.B) { loopBench(b, arithLoop, apply) }
func BenchmarkHashLoop(b *testing.B)       { loopBench(b, hashLoop, apply) }
func BenchmarkInverseLoop(b *testing.B)    { loopBench(b, invLoop, apply) }

// BenchmarkAtomArithmetic is one small atom-only formula: it must not
// allocate.
func BenchmarkAtomArithmetic(b *testing.B) {
	obj := mustParse(b, "[5 7]")
	f := mustParse(b, "[7 [[5 [[0 2] [0 3]]] [6 [[0 3] [1 1]]]]]")
	m := reduce.New(reduce.Config{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m.Reduce(ctx, obj, f, 1000)
	}
	b.ReportMetric(5*float64(b.N)/b.Elapsed().Seconds(), "reductions/s")
}
