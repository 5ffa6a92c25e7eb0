package cert

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// BenchmarkProve proves programs of the shapes a proving farm runs and
// executes them natively, reporting per reduction the time, what proving
// allocated (alloc-B/red) and its peak heap above the start, the
// certificate included (peak-B/red, sampled every 100 µs). spin is
// TestProveChurnUnderMemory's loop on PROVE_SPIN (default 16: 1.6 M
// reductions; 19 is 12.6 M); chain a hash chain (every link new nodes);
// deep a builder of a deep noun of PROVE_DEEP doublings (default 10:
// 94 K reductions, so that CI's race-enabled run of every benchmark
// stays short; 14 is 1.5 M); loops the reference loops set. It uses
// only Prove and reduce, so that a build of another prover runs it too
// (the figures of issue #30 alternate two such test binaries). Proving
// is bounded as the worker bounds a job of 1 GiB (optionsFor): the
// machine takes censuses, at which the prover empties its memo.
func BenchmarkProve(b *testing.B) {
	spin, deep := envInt(b, "PROVE_SPIN", 16), envInt(b, "PROVE_DEEP", 10)
	type job struct {
		program noun.Noun
		inputs  []uint64
		budget  uint64
	}
	one := func(program string, inputs ...uint64) []job {
		return []job{{parse(b, program), inputs, 1 << 40}}
	}
	progs, budgets := loopsPrograms(b)
	var loops []job
	for i, p := range progs {
		loops = append(loops, job{p, nil, budgets[i]})
	}
	for _, c := range []struct {
		name string
		jobs []job
	}{
		{"spin", one(spinProgram, uint64(spin))},
		{"chain", one(goldenChain, 300, 7)},
		{"deep", one("[2 ["+hostile.DeepBuilder()+" [1 [1 0]]]]", uint64(deep))},
		{"loops", loops},
	} {
		ctx := context.Background()
		opt := optionsFor(1 << 30)
		var reductions uint64
		for _, j := range c.jobs {
			run, err := Prove(ctx, j.program, j.inputs, j.budget, opt)
			if err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			reductions += run.Statement.Reductions
		}
		perReduction := func(b *testing.B) float64 { return float64(reductions) * float64(b.N) }
		b.Run(c.name+"/execute", func(b *testing.B) {
			for b.Loop() {
				for _, j := range c.jobs {
					reduce.New(reduce.Config{Provider: reduce.Public{}}).Reduce(ctx, noun.Subject(j.inputs), j.program, j.budget)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perReduction(b), "ns/red")
		})
		b.Run(c.name+"/prove", func(b *testing.B) {
			var alloc, peak uint64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				stop := sampleHeap()
				for _, j := range c.jobs {
					if _, err := Prove(ctx, j.program, j.inputs, j.budget, opt); err != nil {
						b.Fatal(err)
					}
				}
				peak += stop()
				runtime.ReadMemStats(&after)
				alloc += after.TotalAlloc - before.TotalAlloc
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perReduction(b), "ns/red")
			b.ReportMetric(float64(alloc)/perReduction(b), "alloc-B/red")
			b.ReportMetric(float64(peak)/perReduction(b), "peak-B/red")
			b.ReportMetric(float64(reductions), "reductions")
		})
	}
}

// envInt is the integer in the environment variable name, or def.
func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return n
}
