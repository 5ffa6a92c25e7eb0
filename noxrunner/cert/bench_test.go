package cert

import (
	"context"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// loopsPrograms are the loops vectors that succeed, wrapped to quote their
// object (see wrapCase), with their budgets.
func loopsPrograms(b *testing.B) ([]noun.Noun, []uint64) {
	var progs []noun.Noun
	var budgets []uint64
	for _, c := range okVectors(b, "loops") {
		progs = append(progs, c.prog)
		budgets = append(budgets, c.budget)
	}
	return progs, budgets
}

// BenchmarkLoops compares, on the same successful loops programs, native
// execution, proving, and verification (with and without zstd), and
// reports certificate bytes per reduction after zstd.
func BenchmarkLoops(b *testing.B) {
	progs, budgets := loopsPrograms(b)
	ctx := context.Background()
	certs := make([][]byte, len(progs))
	packed := make([][]byte, len(progs))
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	dec, _ := zstd.NewReader(nil)
	var reductions, rawBytes, zBytes uint64
	for i, p := range progs {
		run, err := Prove(ctx, p, nil, budgets[i], ProveOptions{})
		if err != nil {
			b.Fatal(err)
		}
		certs[i] = run.Certificate
		packed[i] = enc.EncodeAll(run.Certificate, nil)
		reductions += run.Statement.Reductions
		rawBytes += uint64(len(run.Certificate))
		zBytes += uint64(len(packed[i]))
	}
	// The saved jobs, as a supervisor holds them.
	exps := make([]Expect, len(certs))
	for i, c := range certs {
		st, err := ReadStatement(c)
		if err != nil {
			b.Fatal(err)
		}
		exps[i] = expectOf(st)
	}
	verify := func(b *testing.B, i int, c []byte) {
		if _, _, err := Verify(ctx, c, exps[i], Bounds{}); err != nil {
			b.Fatal(err)
		}
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(reductions)*float64(b.N)/b.Elapsed().Seconds(), "reductions/s")
	}
	b.Run("execute", func(b *testing.B) {
		for b.Loop() {
			for i, p := range progs {
				reduce.New(reduce.Config{Provider: reduce.Public{}}).Reduce(ctx, noun.Zero, p, budgets[i])
			}
		}
		report(b)
	})
	b.Run("prove", func(b *testing.B) {
		for b.Loop() {
			for i, p := range progs {
				Prove(ctx, p, nil, budgets[i], ProveOptions{})
			}
		}
		report(b)
	})
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			for i, c := range certs {
				verify(b, i, c)
			}
		}
		report(b)
	})
	// The same on one core: digest checks are spread over the cores, so
	// this is the single-threaded cost.
	b.Run("verify-1cpu", func(b *testing.B) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		for b.Loop() {
			for i, c := range certs {
				verify(b, i, c)
			}
		}
		report(b)
	})
	b.Run("verify-zstd", func(b *testing.B) {
		for b.Loop() {
			for i, z := range packed {
				raw, err := dec.DecodeAll(z, nil)
				if err != nil {
					b.Fatal(err)
				}
				verify(b, i, raw)
			}
		}
		report(b)
		b.ReportMetric(float64(zBytes)/float64(reductions), "zstd-bytes/reduction")
		b.ReportMetric(float64(rawBytes)/float64(reductions), "raw-bytes/reduction")
	})
}
