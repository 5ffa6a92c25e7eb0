package worker

import (
	"context"
	"errors"
	"math"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/certprofile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// proveStreamed certifies the run in the v2 profile (cert.ProveTo),
// writing the certificate as the run goes through a zstd Compressor
// straight into the temporary file of its artifact, then publishes it by
// the same atomic rename as v1's; or, when the work directory holds the
// supervisor's stream (a jailed worker), into the stream (openSink). Nothing of the certificate is held
// beyond the prover's bounded working set and the compressor's window:
// its length is bounded by the job's budget (certprofile.MaxEncodedV2) and its
// compressed bytes by the job's artifact limit, checked at each write.
// The write that crosses the limit fails with artifact_too_large and
// removes the partial file; so does any failure, cancellation included:
// nothing is left under the artifact's name or a temporary one.
func (w *Worker) proveStreamed(ctx context.Context, job *protocol.AdmittedJob, wd *artifacts.Dir) (outcome, error) {
	spec := job.Spec
	budget := spec.Limits.Reductions
	opt := proveOptions(streamedData(w.dataOf(job)))
	opt.MaxBytes = certprofile.MaxEncodedV2(budget)
	opt.Pipeline = w.cfg.ProvePipeline
	file, err := openSink(wd, int64(min(job.ArtifactCap(), math.MaxInt64)))
	if err != nil {
		return outcome{}, err
	}
	zw, err := artifacts.NewCompressor(file)
	if err != nil {
		file.Abort()
		return outcome{}, err
	}
	run, err := cert.ProveTo(ctx, zw, job.Program.Formula, spec.Inputs, budget, opt)
	if err == nil {
		// A run cancelled while it was being proved publishes nothing.
		err = ctx.Err()
	}
	if err == nil {
		err = zw.Close()
	} else {
		zw.Abort()
	}
	if err != nil {
		file.Abort()
		if errors.Is(err, cert.ErrNotProvable) {
			return outcome{}, w.whyNotProvable(ctx, job)
		}
		return outcome{}, err
	}
	info, err := file.Commit()
	if err != nil {
		return outcome{}, err
	}
	return certified(run, info)
}

// streamedData is what a streamed prove's run and record may hold of the
// job's data bytes (0: no bound): the compressor's fixed allocation
// (artifacts.CompressorBytes) comes out of it first, at most half of it,
// so that a small limit still proves small jobs.
func streamedData(data uint64) uint64 {
	if data == 0 {
		return 0
	}
	return data - min(artifacts.CompressorBytes, data/2)
}
