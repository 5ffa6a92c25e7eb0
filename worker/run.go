package worker

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// ArtifactName is the name under which a prove run publishes its
// certificate in the attempt's work directory (docs/certificate.md).
const ArtifactName = protocol.StreamedArtifactName

// outcome is what an operation computed; Run adds the job's coordinates.
type outcome struct {
	output       []uint64
	reductions   uint64
	budget       uint64
	artifact     *protocol.ArtifactRef
	verification *protocol.Verification
}

// Run runs one attempt: it admits the job spec's bytes again against the
// worker's capabilities (wall time and memory counted as enforced by the
// host), then executes, proves or verifies. Every failure is a
// *protocol.Error with the contract's code; the direct CLI and the plugin
// both come through here, so they cannot disagree.
func (w *Worker) Run(ctx context.Context, req protocol.RunRequest) (protocol.Result, error) {
	if err := req.Validate(); err != nil {
		return protocol.Result{}, err
	}
	if !w.cfg.within(req.WorkDir) {
		return protocol.Result{}, protocol.Errorf(protocol.CodeIOError, "run: work_dir is outside the worker's work root")
	}
	release, err := w.begin()
	if err != nil {
		return protocol.Result{}, err
	}
	defer release()
	ctx, cancel := w.runContext(ctx)
	defer cancel()

	start := time.Now()
	res, err := w.run(ctx, req)
	if err != nil {
		return protocol.Result{}, contractError(ctx, err)
	}
	res.Telemetry.WallTimeMS = uint64(time.Since(start).Milliseconds())
	// The glue validates results too; validating here gives the direct
	// CLI the same guarantee.
	if err := res.Validate(); err != nil {
		return protocol.Result{}, err
	}
	return res, nil
}

func (w *Worker) run(ctx context.Context, req protocol.RunRequest) (protocol.Result, error) {
	// Trust the bytes, not the supervisor's reading of them.
	job, err := protocol.AdmitToRun(req.JobSpec, w.admissionCaps())
	if err != nil {
		return protocol.Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return protocol.Result{}, err
	}
	op := job.Spec.Operation
	var out outcome
	switch {
	case op == protocol.OpExecute:
		out, err = w.execute(ctx, job)
	case op == protocol.OpProve:
		out, err = w.prove(ctx, job, req.WorkDir)
	case op == protocol.OpVerify && job.Spec.ArtifactRef != nil:
		out, err = w.verifyByRef(ctx, job, req.WorkDir)
	case op == protocol.OpVerify:
		out, err = w.verify(ctx, job)
	default:
		// Admit refuses other operations; reaching this is a bug.
		err = protocol.Errorf(protocol.CodeInternalError, "operation %q slipped through admission", op)
	}
	if err != nil {
		return protocol.Result{}, opError(string(op), err)
	}
	return protocol.Result{
		Contract:        protocol.ContractV1,
		JobID:           job.Spec.JobID,
		Attempt:         req.Attempt,
		Profile:         job.Spec.Profile,
		ProgramIdentity: job.Identity(),
		Kind:            protocol.KindFor(op),
		Output:          out.output,
		Reductions:      out.reductions,
		Budget:          out.budget,
		Artifact:        out.artifact,
		Verification:    out.verification,
	}, nil
}

// digest decodes the artifacts package's lowercase hex SHA-256.
func digest(s string) ([32]byte, error) {
	var d [32]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(d) {
		return d, fmt.Errorf("artifact digest %q is not 32 hex bytes", s)
	}
	copy(d[:], b)
	return d, nil
}
