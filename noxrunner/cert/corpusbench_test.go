package cert

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// benchSizes are the corpus sizes the benchmarks run: BENCH_PROVE_SIZES
// (comma separated), or the smoke size 1e5.
func benchSizes() []string {
	if s := os.Getenv("BENCH_PROVE_SIZES"); s != "" {
		return strings.Split(s, ",")
	}
	return []string{"1e5"}
}

// BenchmarkCorpus runs the corpus (testdata/corpus) at the sizes of
// BENCH_PROVE_SIZES (comma separated, default the smoke size 1e5, which
// keeps CI's one iteration cheap): execute, prove and verify of each case
// in one run, so that prove/execute and verify/execute (x-execute) come
// from the same load, for v1 (prove, verify) and v2 (prove-v2,
// verify-v2) side by side. It reports the reductions, the certificate's
// bytes per reduction raw and after zstd, the prover's own estimate of
// what it held at the end (held-bytes: proverheld.go's accounting), the
// verifier's table size (table-slots) and, for v2, what its arrays held
// at the end (held-bytes: verifyheld.go), and, on Linux, the same ratios in
// CPU time (cpu-x-execute, see reportCPU).
func BenchmarkCorpus(b *testing.B) {
	ctx := context.Background()
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true), zstd.WithWindowSize(8<<20))
	for _, c := range loadCorpus(b, benchSizes()...) {
		b.Run(c.program+"/"+c.size, func(b *testing.B) {
			prog := corpusProgram(b, c.program)
			inputs := []uint64{c.input}
			var execNs, execCPU float64
			b.Run("execute", func(b *testing.B) {
				cpu := processCPU()
				for b.Loop() {
					m := reduce.New(reduce.Config{Provider: reduce.Public{}, DepthLimit: DepthLimit})
					out, err := m.Reduce(ctx, noun.Subject(inputs), prog, corpusBudget)
					if err != nil || out.Cost(corpusBudget) != c.reductions {
						b.Fatalf("execute: %+v %v", out, err)
					}
				}
				execNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				execCPU = float64(processCPU()-cpu) / float64(b.N)
				b.ReportMetric(float64(c.reductions), "reductions")
			})
			var run *Run
			b.Run("prove", func(b *testing.B) {
				cpu := processCPU()
				for b.Loop() {
					var err error
					if run, err = Prove(ctx, prog, inputs, corpusBudget, ProveOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				reportCPU(b, cpu, execCPU)
				packed := enc.EncodeAll(run.Certificate, nil)
				if execNs > 0 { // 0 when -bench filters execute out
					b.ReportMetric(ns/execNs, "x-execute")
				}
				b.ReportMetric(float64(len(run.Certificate))/float64(c.reductions), "raw-bytes/reduction")
				b.ReportMetric(float64(len(packed))/float64(c.reductions), "zstd-bytes/reduction")
				b.ReportMetric(float64(heldAtEnd(b, prog, inputs)), "held-bytes")
			})
			if run != nil {
				verifyV1(b, run, enc, execNs, execCPU)
			}
			benchV2(b, prog, inputs, c, execNs, execCPU)
		})
	}
}

// verifyV1 is BenchmarkCorpus's verify of a v1 certificate, streamed
// from its zstd frame.
func verifyV1(b *testing.B, run *Run, enc *zstd.Encoder, execNs, execCPU float64) {
	ctx := context.Background()
	packed := enc.EncodeAll(run.Certificate, nil)
	exp := expectOf(&run.Statement)
	b.Run("verify", func(b *testing.B) {
		cpu := processCPU()
		for b.Loop() {
			dec, err := zstd.NewReader(bytes.NewReader(packed), zstd.WithDecoderMaxWindow(8<<20))
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := VerifyFrom(ctx, dec, int64(len(run.Certificate)), exp, Bounds{}); err != nil {
				b.Fatal(err)
			}
			dec.Close()
		}
		reportCPU(b, cpu, execCPU)
		if execNs > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/execNs, "x-execute")
		}
		b.ReportMetric(float64(tableSlots(b, run.Certificate, exp)), "table-slots")
	})
}

// countingWriter counts what is written through it.
type countingWriter struct {
	w io.Writer
	n uint64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}

// benchV2 is BenchmarkCorpus's v2 prove (ProveTo into a writer that
// counts: the run and the encoding, not the compressor, as v1's prove;
// with ProveOptions.Pipeline: pipelined with two CPUs; and
// prove-v2-sequential, never)
// and verify (VerifyFrom of the zstd stream, length unknown), with the
// same metrics as v1's beside them. The compressed size is the stream
// of one more run through a zstd encoder with the artifact's settings.
func benchV2(b *testing.B, prog noun.Noun, inputs []uint64, c corpusCase, execNs, execCPU float64) {
	ctx := context.Background()
	var st Statement
	var packed bytes.Buffer
	b.Run("prove-v2", func(b *testing.B) {
		var raw uint64
		cpu := processCPU()
		for b.Loop() {
			w := &countingWriter{w: io.Discard}
			run, err := ProveTo(ctx, w, prog, inputs, corpusBudget, ProveOptions{Pipeline: true})
			if err != nil {
				b.Fatal(err)
			}
			st, raw = run.Statement, w.n
		}
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		reportCPU(b, cpu, execCPU)
		packed.Reset()
		zw, _ := zstd.NewWriter(&packed, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true), zstd.WithWindowSize(8<<20))
		_, p, err := proveTo(ctx, zw, prog, inputs, corpusBudget, ProveOptions{})
		if err == nil {
			err = zw.Close()
		}
		if err != nil {
			b.Fatal(err)
		}
		if execNs > 0 {
			b.ReportMetric(ns/execNs, "x-execute")
		}
		b.ReportMetric(float64(raw)/float64(c.reductions), "raw-bytes/reduction")
		b.ReportMetric(float64(packed.Len())/float64(c.reductions), "zstd-bytes/reduction")
		b.ReportMetric(float64(p.held()), "held-bytes")
	})
	if packed.Len() == 0 {
		return
	}
	// The same prove with the prover on the machine's goroutine
	// (provepipe.go), for the pipeline's gain side by side.
	b.Run("prove-v2-sequential", func(b *testing.B) {
		withPipeline(b, pipelineOff)
		cpu := processCPU()
		for b.Loop() {
			if _, err := ProveTo(ctx, io.Discard, prog, inputs, corpusBudget, ProveOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpu, execCPU)
		if execNs > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/execNs, "x-execute")
		}
	})
	exp := expectOf(&st)
	b.Run("verify-v2", func(b *testing.B) {
		cpu := processCPU()
		for b.Loop() {
			dec, err := zstd.NewReader(bytes.NewReader(packed.Bytes()), zstd.WithDecoderMaxWindow(8<<20))
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := VerifyFrom(ctx, dec, -1, exp, Bounds{}); err != nil {
				b.Fatal(err)
			}
			dec.Close()
		}
		reportCPU(b, cpu, execCPU)
		if execNs > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/execNs, "x-execute")
		}
		dec, err := zstd.NewReader(bytes.NewReader(packed.Bytes()), zstd.WithDecoderMaxWindow(8<<20))
		if err != nil {
			b.Fatal(err)
		}
		defer dec.Close()
		v := &verifier{ctx: ctx, r: newStreamReader(dec, -1), maxNodes: DefaultMaxNodes}
		if _, _, err := v.verify(exp); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(v.t.len()), "table-slots")
		b.ReportMetric(float64(v.held()), "held-bytes")
	})
}

// heldAtEnd is the prover's own estimate of what it holds (held, in
// proverheld.go) at the end of a run of prog: its table, tape, memo and
// the run's cells at the last census. The table and the tape only grow,
// so this is close to the peak. It repeats Prove's setup: keep it in step
// with prove.go.
func heldAtEnd(b *testing.B, prog noun.Noun, inputs []uint64) uint64 {
	p, m := newProver(ProveOptions{})
	p.intern(prog)
	subject := noun.Subject(inputs)
	p.intern(subject)
	if _, err := m.Reduce(context.Background(), subject, prog, corpusBudget); err != nil {
		b.Fatal(err)
	}
	return p.held()
}

// tableSlots is the size of the verifier's table (its arrays' length, the
// most nodes it held at once) after verifying the v1 certificate b.
func tableSlots(b *testing.B, cert []byte, exp Expect) uint32 {
	v := &verifier{ctx: context.Background(), r: &reader{b: cert}, maxNodes: DefaultMaxNodes}
	if _, _, err := v.verify(exp); err != nil {
		b.Fatal(err)
	}
	return v.t.len()
}

// reportCPU reports the CPU time of the loop since cpu (every thread of
// the process: the collector's too) over execute's (cpu-x-execute). On a
// machine shared with other work, wall time (x-execute) counts the time
// the benchmark waited for a CPU, which grows with what it allocates;
// CPU time does not. Linux only (processCPU).
func reportCPU(b *testing.B, cpu time.Duration, execCPU float64) {
	if execCPU > 0 {
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/execCPU, "cpu-x-execute")
	}
}
