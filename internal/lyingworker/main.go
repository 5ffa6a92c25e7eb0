// Command lyingworker is a nox-worker that lies, for the tests of issue
// #16: the supervisor trusts no worker and verifies every result with its
// own verifier, so a worker that returns a hostile artifact as a success
// must cost the supervisor no more than the job it answers. It serves the
// worker protocol with the real worker, except that:
//
//   - a verify job is reported as verified without looking at its
//     certificate: the job's program is executed instead, and its result
//     is reported as the verification of the job's artifact, so that the
//     supervisor's own verification of that artifact is what decides;
//   - a prove job publishes the nested-result attack (hostile.NestedResult
//     for the job's budget) as its certificate and reports the program's
//     executed result as certified by it.
//
// It is built by tests only (internal/testbin) and never installed.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/pluginserver"
	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
	"github.com/cyberia-to/cyber-supervisor/worker"
)

func main() {
	gate.MaybeRun()
	w, err := worker.New(worker.Config{
		WorkerID: os.Getenv(protocol.EnvWorkerID),
		DeviceID: os.Getenv(protocol.EnvWorkerDeviceID),
		BootID:   os.Getenv(protocol.EnvWorkerBootID),
		Network:  os.Getenv(protocol.EnvWorkerNetwork),
		WorkRoot: os.Getenv(protocol.EnvWorkerWorkRoot),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "lyingworker:", err)
		os.Exit(1)
	}
	if err := pluginserver.Serve(&liar{Worker: w}, pluginserver.Config{}); err != nil {
		fmt.Fprintln(os.Stderr, "lyingworker:", err)
		os.Exit(1)
	}
}

// liar is the real worker with lying verify and prove.
type liar struct{ *worker.Worker }

func (l *liar) Run(ctx context.Context, req protocol.RunRequest) (protocol.Result, error) {
	spec, err := protocol.ParseJobSpec(req.JobSpec)
	if err != nil || spec.Operation == protocol.OpExecute {
		return l.Worker.Run(ctx, req)
	}
	op, artifact := spec.Operation, spec.Artifact
	spec.Operation, spec.Artifact, spec.ExpectedOutput = protocol.OpExecute, nil, nil
	exec, err := spec.MarshalJSON()
	if err != nil {
		return protocol.Result{}, err
	}
	req.JobSpec = exec
	res, err := l.Worker.Run(ctx, req)
	if err != nil {
		return res, err
	}
	if op == protocol.OpVerify {
		res.Kind = protocol.KindVerification
		res.Verification = &protocol.Verification{ArtifactSHA256: sha256.Sum256(artifact),
			Checked: protocol.Expectations{Program: true, Inputs: true, ExpectedOutput: true, Budget: true}}
		return res, nil
	}
	dir, err := artifacts.OpenDir(req.WorkDir)
	if err != nil {
		return protocol.Result{}, err
	}
	defer dir.Close()
	info, err := dir.PublishCompressed(worker.ArtifactName, hostile.NestedResult(hostile.NestedPairs, spec.Limits.Reductions), 1<<20)
	if err != nil {
		return protocol.Result{}, err
	}
	res.Kind = protocol.KindExecutionCertificate
	res.Artifact = &protocol.ArtifactRef{Name: info.Name, Size: uint64(info.Size)}
	sum, err := hex.DecodeString(info.SHA256)
	if err != nil || len(sum) != len(res.Artifact.SHA256) {
		return protocol.Result{}, fmt.Errorf("artifact digest %q", info.SHA256)
	}
	copy(res.Artifact.SHA256[:], sum)
	return res, nil
}
