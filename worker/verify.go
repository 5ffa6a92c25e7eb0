package worker

import (
	"context"
	"crypto/sha256"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// verify checks the job's certificate: first on its own (the zstd frame,
// then every step and the cost accounting), then against the job. Only
// what was authenticated is reported: output, reductions and budget come
// from the verified statement, never from anything else.
func (w *Worker) verify(ctx context.Context, job *protocol.AdmittedJob) (outcome, error) {
	st, err := w.ReadCertificate(job.Spec.Artifact)
	if err != nil {
		return outcome{}, err
	}
	if err := ctx.Err(); err != nil {
		return outcome{}, err
	}
	exp := cert.Expect{
		Program: job.Program.Tokens,
		Inputs:  job.Spec.Inputs,
		Output:  job.Spec.ExpectedOutput,
		Budget:  job.Spec.Limits.Reductions,
	}
	checked, err := exp.Check(st)
	if err != nil {
		return outcome{}, err
	}
	return outcome{
		output:     st.Outputs,
		reductions: st.Reductions,
		budget:     st.Budget,
		verification: &protocol.Verification{
			ArtifactSHA256: sha256.Sum256(job.Spec.Artifact),
			Checked: protocol.Expectations{
				Program:        checked.Program,
				Inputs:         checked.Inputs,
				ExpectedOutput: checked.Output,
				Budget:         checked.Budget,
			},
		},
	}, nil
}

// ReadCertificate decompresses an on-disk certificate (one zstd frame that
// declares its content size) and verifies it on its own, returning the
// statement it proves. The declared size is checked against the worker's
// bound before anything is decompressed. Whether the statement is the one
// a job wanted is a separate question (cert.Expect). Errors map to
// artifact_too_large (declared size over the bound) and proof_rejected
// (anything else) through the same mapping as Run's.
func (w *Worker) ReadCertificate(artifact []byte) (*cert.Statement, error) {
	st, err := w.readCertificate(artifact)
	if err != nil {
		return nil, contractError(context.Background(), err)
	}
	return st, nil
}

func (w *Worker) readCertificate(artifact []byte) (*cert.Statement, error) {
	raw, err := artifacts.Decompress(artifact, w.cfg.MaxCertificateBytes)
	if err != nil {
		return nil, err
	}
	return cert.Verify(raw)
}
