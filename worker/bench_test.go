package worker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/vectors"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// benchCase is one program of a benchmark set, with its three jobs ready,
// as spec bytes and admitted.
type benchCase struct {
	execute, prove, verify []byte
	jobs                   [3]*protocol.AdmittedJob // execute, prove, verify
	reductions             uint64
	artifactBytes          uint64
}

// benchSet builds the execute, prove and verify jobs of each program; the
// verify job checks the certificate the worker itself proved.
func benchSet(b *testing.B, w *Worker, progs []string, inputs [][]uint64, budgets []uint64) []benchCase {
	var set []benchCase
	var err error
	for i, src := range progs {
		j := newJob(b, protocol.OpExecute, src, inputs[i], budgets[i])
		exec := j.bytes(b)
		j.Operation = protocol.OpProve
		prove := j.bytes(b)
		res, file := proveJob(b, w, src, inputs[i], budgets[i])
		j.Operation = protocol.OpVerify
		j.Artifact = file
		c := benchCase{
			execute: exec, prove: prove, verify: j.bytes(b),
			reductions: res.Reductions, artifactBytes: res.Artifact.Size,
		}
		for k, spec := range [][]byte{c.execute, c.prove, c.verify} {
			if c.jobs[k], err = protocol.Admit(spec, w.admissionCaps()); err != nil {
				b.Fatal(err)
			}
		}
		set = append(set, c)
	}
	return set
}

func exampleSet(b *testing.B, w *Worker) []benchCase {
	progs := []string{
		example(b, "add.nox"), example(b, "inverse.nox"), example(b, "countdown.nox"),
		example(b, "hashchain.nox"), example(b, "doubling.nox"),
	}
	inputs := [][]uint64{{3, 5}, {7}, {400}, {400, 1}, {14}}
	budgets := []uint64{1_000_000, 1_000_000, 1_000_000, 1_000_000, 1_000_000}
	return benchSet(b, w, progs, inputs, budgets)
}

// loopsSet is the successful loops vectors, each wrapped to quote its
// object so that it runs on the empty subject (as in noxrunner/cert).
func loopsSet(b *testing.B, w *Worker) []benchCase {
	all, err := vectors.Load()
	if err != nil {
		b.Fatal(err)
	}
	var progs []string
	var inputs [][]uint64
	var budgets []uint64
	for _, c := range vectors.Group(all, "loops") {
		if c.Expect.Status != "ok" {
			continue
		}
		src := "[2 [[1 " + c.Object + "] [1 " + c.Formula + "]]]"
		if _, err := protocol.WrapNox("loop.nox", []byte(src)); err != nil {
			continue // over the profile's program bounds
		}
		if _, err := noun.ParseWith(src, noun.ParseOptions{Literals: noun.CanonicalLiterals}); err != nil {
			continue
		}
		progs = append(progs, src)
		inputs = append(inputs, nil)
		budgets = append(budgets, c.Budget+3)
	}
	return benchSet(b, w, progs, inputs, budgets)
}

// BenchmarkWorker runs execute, prove and verify of the same programs and
// reports, per set, the time of each operation relative to execution and
// the certificate's bytes per reduction after zstd. "run" goes through
// Worker.Run, admission included (parsing the bundle and computing the
// program's particle, which dominates for short runs of large programs);
// "op" times the operations alone on jobs admitted beforehand. Targets:
// verify/execute ≤ 1; ≤ 48 B/reduction.
func BenchmarkWorker(b *testing.B) {
	w := newWorker(b, Config{})
	for _, set := range []struct {
		name  string
		cases func(*testing.B, *Worker) []benchCase
	}{{"examples", exampleSet}, {"loops", loopsSet}} {
		b.Run(set.name, func(b *testing.B) {
			cases := set.cases(b, w)
			var reductions, zBytes uint64
			for _, c := range cases {
				reductions += c.reductions
				zBytes += c.artifactBytes
			}
			dir := b.TempDir()
			ctx := context.Background()
			timed := func(f func() error) time.Duration {
				start := time.Now()
				if err := f(); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			report := func(b *testing.B, exec, prove, verify time.Duration) {
				n := float64(b.N)
				b.ReportMetric(float64(exec.Nanoseconds())/n, "execute-ns/op")
				b.ReportMetric(float64(prove.Nanoseconds())/n, "prove-ns/op")
				b.ReportMetric(float64(verify.Nanoseconds())/n, "verify-ns/op")
				b.ReportMetric(float64(prove)/float64(exec), "prove/execute")
				b.ReportMetric(float64(verify)/float64(exec), "verify/execute")
				b.ReportMetric(float64(zBytes)/float64(reductions), "zstd-B/reduction")
				b.ReportMetric(float64(reductions)*n/exec.Seconds(), "exec-reductions/s")
			}
			b.Run("run", func(b *testing.B) {
				run := func(spec []byte) func() error {
					return func() error {
						_, err := w.Run(ctx, protocol.RunRequest{JobSpec: spec, Attempt: 1, WorkDir: dir})
						return err
					}
				}
				var exec, prove, verify time.Duration
				for b.Loop() {
					for _, c := range cases {
						exec += timed(run(c.execute))
						prove += timed(run(c.prove))
						os.Remove(filepath.Join(dir, ArtifactName))
						verify += timed(run(c.verify))
					}
				}
				report(b, exec, prove, verify)
			})
			b.Run("op", func(b *testing.B) {
				var exec, prove, verify time.Duration
				for b.Loop() {
					for _, c := range cases {
						exec += timed(func() error { _, err := w.execute(ctx, c.jobs[0]); return err })
						prove += timed(func() error { _, err := w.prove(ctx, c.jobs[1], dir); return err })
						os.Remove(filepath.Join(dir, ArtifactName))
						verify += timed(func() error { _, err := w.verify(ctx, c.jobs[2]); return err })
					}
				}
				report(b, exec, prove, verify)
			})
		})
	}
}
