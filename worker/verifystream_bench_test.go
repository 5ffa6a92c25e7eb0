package worker

import (
	"context"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/internal/sidebyside"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// verifyWhole is how the verify job checked an artifact before it was
// streamed: the whole frame decompressed, then verified.
func verifyWhole(job *protocol.AdmittedJob, w *Worker) error {
	spec := job.Spec
	raw, err := artifacts.Decompress(spec.Artifact, w.maxCertificateBytes(spec.Profile, spec.Limits))
	if err != nil {
		return err
	}
	_, _, err = cert.Verify(context.Background(), raw, expectOf(job), w.verifyBounds(spec.Limits))
	return err
}

// verifyStreamed is the verify job's check as it is (Worker.verify's).
func verifyStreamed(job *protocol.AdmittedJob, w *Worker) error {
	spec := job.Spec
	raw, err := artifacts.NewDecompressor(spec.Artifact, w.maxCertificateBytes(spec.Profile, spec.Limits))
	if err != nil {
		return err
	}
	defer raw.Close()
	_, _, err = cert.VerifyFrom(context.Background(), raw, raw.Size(), expectOf(job), w.verifyBounds(spec.Limits))
	return err
}

func expectOf(job *protocol.AdmittedJob) cert.Expect {
	return cert.Expect{Program: job.Program.Tokens, Inputs: job.Spec.Inputs, Output: job.Spec.ExpectedOutput, Budget: job.Spec.Limits.Reductions}
}

// BenchmarkVerifyArtifact compares, side by side in one run, the verify
// job's check of an artifact streamed (ns/op) and decompressed whole
// first (old-ns/op; x-old is how many times faster streaming is): on
// honest certificates (the loops set, the examples, one of 2.7 MB and
// one of 11 MB, above the decoder's 8 MiB window) and on the 1.1 KB
// attack of issue #16. B/op is the two sides' together.
func BenchmarkVerifyArtifact(b *testing.B) {
	w := newWorker(b, Config{})
	verifyJobs := func(cases []benchCase) []*protocol.AdmittedJob {
		var jobs []*protocol.AdmittedJob
		for _, c := range cases {
			jobs = append(jobs, c.jobs[2])
		}
		return jobs
	}
	large := func(doublings uint64) []*protocol.AdmittedJob {
		return verifyJobs(benchSet(b, w, []string{hostile.DeepBranch()}, [][]uint64{{doublings}}, []uint64{1 << 40}))
	}
	attack, err := protocol.Admit(hostileVerifyJob(b, hostile.NestedResultClaimingBudget(hostile.NestedPairs, 1_000_000), 1_000_000, 0), w.admissionCaps())
	if err != nil {
		b.Fatal(err)
	}
	for _, set := range []struct {
		name   string
		jobs   []*protocol.AdmittedJob
		reject bool
	}{
		{"loops", verifyJobs(loopsSet(b, w)), false},
		{"examples", verifyJobs(exampleSet(b, w)), false},
		{"deep-3MB", large(13), false},  // 2.7 MB raw, 1.1 MB of zstd
		{"deep-11MB", large(15), false}, // 11 MB raw, 4.5 MB of zstd
		{"attack", []*protocol.AdmittedJob{attack}, true},
	} {
		b.Run(set.name, func(b *testing.B) {
			run := func(verify func(*protocol.AdmittedJob, *Worker) error) func(int) {
				return func(n int) {
					for range n {
						for _, j := range set.jobs {
							if err := verify(j, w); (err != nil) != set.reject {
								b.Fatal(err)
							}
						}
					}
				}
			}
			sidebyside.Compare(b, run(verifyWhole), run(verifyStreamed))
		})
	}
}
