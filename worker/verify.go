package worker

import (
	"context"
	"crypto/sha256"
	"io"

	"github.com/cyberia-to/cyber-supervisor/internal/certprofile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// verify checks the job's certificate for this job: the zstd frame's
// declared size within what the job allows, then (cert.VerifyFrom, reading
// the frame as it decompresses) the statement against the job's program,
// inputs, expected output and budget before anything else, then every
// step and the cost accounting with the node table bounded by the job's
// memory, stopping at the first step that fails: nothing past it is
// decompressed. Only what was authenticated is reported: output,
// reductions and budget come from the verified statement, never from
// anything else.
func (w *Worker) verify(ctx context.Context, job *protocol.AdmittedJob) (outcome, error) {
	spec := job.Spec
	raw, err := certprofile.Open(spec.Profile, spec.Artifact, w.maxCertificateBytes(spec.Profile, spec.Limits))
	if err != nil {
		return outcome{}, err
	}
	defer raw.Close()
	st, checked, err := cert.VerifyFrom(ctx, raw, raw.Size, expectations(job), w.verifyBounds(spec.Limits))
	if err != nil {
		return outcome{}, err
	}
	return verified(st, checked, sha256.Sum256(spec.Artifact)), nil
}

// expectations are what the job says its certificate must show.
func expectations(job *protocol.AdmittedJob) cert.Expect {
	return cert.Expect{
		Program: job.Program.Tokens,
		Inputs:  job.Spec.Inputs,
		Output:  job.Spec.ExpectedOutput,
		Budget:  job.Spec.Limits.Reductions,
	}
}

// verified is the outcome of a certificate (digest) that showed st,
// having checked what checked says.
func verified(st *cert.Statement, checked cert.Checked, digest [32]byte) outcome {
	return outcome{
		output:     st.Outputs,
		reductions: st.Reductions,
		budget:     st.Budget,
		verification: &protocol.Verification{
			ArtifactSHA256: digest,
			Checked: protocol.Expectations{
				Program:        checked.Program,
				Inputs:         checked.Inputs,
				ExpectedOutput: checked.Output,
				Budget:         checked.Budget,
			},
		},
	}
}

// maxCertificateBytes is what a certificate of profile for a job under
// these limits may decompress to. v1: what its budget can produce
// (cert.MaxEncodedFor), at most the job's memory (a prover under that
// limit held it whole), at most this worker's bound. v2: what its budget
// can produce (certprofile.MaxEncodedV2), nothing else: it is proved and verified
// streamed, in memory that does not grow with it, and its compressed
// bytes are bounded by the job's artifact limit.
func (w *Worker) maxCertificateBytes(profile string, l protocol.Limits) int64 {
	if profile == protocol.ProfilePublicTraceV2 {
		return int64(certprofile.MaxEncodedV2(l.Reductions))
	}
	n := min(uint64(w.cfg.MaxCertificateBytes), cert.MaxEncodedFor(l.Reductions), w.memoryOf(l))
	return int64(n)
}

// verifyBounds bounds a verification's node table by the job's memory,
// with the reserve of a process that also holds the certificate
// (guard.go).
func (w *Worker) verifyBounds(l protocol.Limits) cert.Bounds {
	return cert.Bounds{MaxNodes: cellGuard(w.memoryOf(l), cert.NodeBytes)}
}

// ReadStatement decodes the statement of an on-disk certificate (one zstd
// frame that declares its content size, within what a job of budget at
// most maxBudget allows), decompressing only as far as the statement
// goes. Nothing in it is verified: a caller that has no saved job
// (nox-worker verify without --program) takes the expectations it does
// not have from here, and then runs the verify job, which checks them.
// Errors map to artifact_too_large (declared size over the bound) and
// proof_rejected (anything else) through the same mapping as Run's.
//
// A v2 certificate's statement is its header (program, inputs, budget):
// its outputs and reductions come in its trailer, and are not read here
// (cert.ReadStatementFrom).
func (w *Worker) ReadStatement(artifact []byte, maxBudget uint64) (*cert.Statement, error) {
	profile, err := certprofile.Detect(artifact)
	if err != nil {
		return nil, contractError(context.Background(), err)
	}
	// Only the statement is read: its decoder keeps a window of it, not
	// the certificate's.
	raw, err := certprofile.OpenStatement(profile, artifact, w.maxCertificateBytes(profile, protocol.Limits{Reductions: maxBudget}))
	if err != nil {
		return nil, contractError(context.Background(), err)
	}
	return readStatement(raw)
}

// ReadStatementAt is ReadStatement of a certificate of size bytes read
// from r (a file too long to hold); it decompresses only as far as the
// statement goes, through a decoder with the frame's window (up to 8
// MiB).
func (w *Worker) ReadStatementAt(r io.ReaderAt, size int64, maxBudget uint64) (*cert.Statement, error) {
	profile, err := certprofile.DetectReader(io.NewSectionReader(r, 0, size), size)
	if err != nil {
		return nil, contractError(context.Background(), err)
	}
	raw, err := certprofile.OpenReader(profile, io.NewSectionReader(r, 0, size), size, w.maxCertificateBytes(profile, protocol.Limits{Reductions: maxBudget}))
	if err != nil {
		return nil, contractError(context.Background(), err)
	}
	return readStatement(raw)
}

func readStatement(raw *certprofile.Certificate) (*cert.Statement, error) {
	defer raw.Close()
	st, err := cert.ReadStatementFrom(raw, raw.Size)
	if err != nil {
		return nil, contractError(context.Background(), err)
	}
	return st, nil
}
