package cert

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// BenchmarkCorpusVerify is the verify/execute ratio of BenchmarkCorpus
// for v2 alone, measured so that it holds on a loaded machine: the
// certificate is proved once (not measured), then each iteration runs
// an execute and a verify of the same case one after the other, and the
// ratio (cpu-x-execute) is of their CPU times summed over the iterations
// (every thread of the process, on Linux; x-execute is the same in wall
// time). Load that comes and goes then weighs on both alike. Sizes as
// BenchmarkCorpus (BENCH_PROVE_SIZES, default 1e5); use -benchtime Nx.
func BenchmarkCorpusVerify(b *testing.B) {
	ctx := context.Background()
	for _, c := range loadCorpus(b, benchSizes()...) {
		b.Run(c.program+"/"+c.size, func(b *testing.B) {
			prog := corpusProgram(b, c.program)
			inputs := []uint64{c.input}
			var packed bytes.Buffer
			zw, err := zstd.NewWriter(&packed, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true), zstd.WithWindowSize(8<<20))
			if err != nil {
				b.Fatal(err)
			}
			run, _, err := proveTo(ctx, zw, prog, inputs, corpusBudget, ProveOptions{})
			if err == nil {
				err = zw.Close()
			}
			if err != nil {
				b.Fatal(err)
			}
			exp := expectOf(&run.Statement)
			var execCPU, verifyCPU, execWall, verifyWall time.Duration
			for b.Loop() {
				cpu, wall := processCPU(), time.Now()
				m := reduce.New(reduce.Config{Provider: reduce.Public{}, DepthLimit: DepthLimit})
				out, err := m.Reduce(ctx, noun.Subject(inputs), prog, corpusBudget)
				if err != nil || out.Cost(corpusBudget) != c.reductions {
					b.Fatalf("execute: %+v %v", out, err)
				}
				execCPU += processCPU() - cpu
				execWall += time.Since(wall)
				cpu, wall = processCPU(), time.Now()
				dec, err := zstd.NewReader(bytes.NewReader(packed.Bytes()), zstd.WithDecoderMaxWindow(8<<20), zstd.WithDecoderConcurrency(1))
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := VerifyFrom(ctx, dec, -1, exp, Bounds{}); err != nil {
					b.Fatal(err)
				}
				dec.Close()
				verifyCPU += processCPU() - cpu
				verifyWall += time.Since(wall)
			}
			if execCPU > 0 {
				b.ReportMetric(float64(verifyCPU)/float64(execCPU), "cpu-x-execute")
			}
			b.ReportMetric(float64(verifyWall)/float64(execWall), "x-execute")
			b.ReportMetric(float64(c.reductions), "reductions")
		})
	}
}
