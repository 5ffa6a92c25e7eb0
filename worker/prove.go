package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// prove certifies the run with cert.Prove (v1; v2: proveStreamed) and
// publishes the certificate,
// zstd-compressed, as ArtifactName in the attempt's work directory. The
// directory is opened first, so that a run whose certificate could not be
// published is not run at all. Nothing is published when the run fails,
// is cancelled, or the compressed certificate exceeds the job's artifact
// limit.
func (w *Worker) prove(ctx context.Context, job *protocol.AdmittedJob, dir string) (outcome, error) {
	wd, err := openWorkDir(dir)
	if err != nil {
		return outcome{}, err
	}
	defer wd.Close()
	if job.Spec.Profile == protocol.ProfilePublicTraceV2 {
		return w.proveStreamed(ctx, job, wd)
	}

	spec := job.Spec
	budget := spec.Limits.Reductions
	data := w.dataOf(job)
	opt := proveOptions(data)
	// What the verifier of this job will accept (a larger one could
	// never be checked), stopped as soon as it is crossed.
	opt.MaxBytes = uint64(w.maxCertificateBytes(spec.Profile, spec.Limits))
	run, err := cert.Prove(ctx, job.Program.Formula, spec.Inputs, budget, opt)
	if errors.Is(err, cert.ErrNotProvable) {
		return outcome{}, w.whyNotProvable(ctx, job)
	}
	if err != nil {
		return outcome{}, err
	}
	// A run cancelled while it was being proved publishes nothing.
	if err := ctx.Err(); err != nil {
		return outcome{}, err
	}
	if err := w.readyToCompress(run.Certificate, data); err != nil {
		return outcome{}, err
	}
	info, err := publish(wd, run.Certificate, job.ArtifactCap())
	if err != nil {
		return outcome{}, err
	}
	return certified(run, info)
}

// whyNotProvable explains a cert.ErrNotProvable. The certificate package
// says that a run cannot be certified but not, in a typed way, why; the
// native run of the same job is deterministic and tells: a halt or an error
// outcome maps as in execute; a result that runs fine either has more
// output atoms than a statement holds or a certificate over the format's
// size bound. It costs one more run, on the failure path only.
func (w *Worker) whyNotProvable(ctx context.Context, job *protocol.AdmittedJob) error {
	out, err := w.execute(ctx, job)
	if err != nil {
		return err
	}
	if len(out.output) > cert.MaxOutputs {
		return fmt.Errorf("%w: the result has %d atoms, a certificate's statement holds at most %d",
			ErrOutputTooLarge, len(out.output), cert.MaxOutputs)
	}
	if job.Spec.Profile == protocol.ProfilePublicTraceV2 {
		return protocol.Errorf(protocol.CodeInternalError, "the run executes but could not be certified in %s", job.Spec.Profile)
	}
	return fmt.Errorf("%w: the certificate would exceed the format's %d bytes", ErrCertificateTooLarge, cert.MaxEncodedBytes)
}

// compressorBytes is what compressing a certificate of n bytes costs:
// the encoder's tables and window (artifacts.Compress allocates 18-19
// MiB for any input from 256 KiB up, 2 MiB up to 128 KiB; measured).
func compressorBytes(n int) uint64 {
	if n <= 128<<10 {
		return 2 << 20
	}
	return 19 << 20
}

// readyToCompress checks that the certificate and its compressor fit in
// what the run may hold (data bytes, 0: no bound): a certificate that
// does not is memory_exhausted, decided here rather than by the kernel.
// In a process of its own, the worker then collects what the run left
// (the tape's earlier copies, the run's pairs), so that the compressor's
// memory comes from it rather than from the rest of the job's limit.
func (w *Worker) readyToCompress(certificate []byte, data uint64) error {
	need := uint64(cap(certificate)) + compressorBytes(len(certificate))
	if data != 0 && need > data {
		return protocol.Errorf(protocol.CodeMemoryExhausted,
			"stopped early: compressing the certificate (%d bytes) would take about %d bytes, more than the memory limit's share for data (%d)", len(certificate), need, data)
	}
	if w.cfg.OwnProcess && len(certificate) >= 1<<20 {
		runtime.GC()
	}
	return nil
}

// certified is the outcome of a certified run whose certificate was
// published as info, in either profile.
func certified(run *cert.Run, info artifacts.Info) (outcome, error) {
	sum, err := digest(info.SHA256)
	if err != nil {
		return outcome{}, err
	}
	st := run.Statement
	return outcome{
		output:     st.Outputs,
		reductions: st.Reductions,
		budget:     st.Budget,
		artifact:   &protocol.ArtifactRef{Name: info.Name, Size: uint64(info.Size), SHA256: sum},
	}, nil
}
