// Command lyingworker is a nox-worker that lies, for the tests of issue
// #16: the supervisor trusts no worker and verifies every result with its
// own verifier, so a worker that returns a hostile artifact as a success
// must cost the supervisor no more than the job it answers. It serves the
// worker protocol with the real worker, except that:
//
//   - a verify job is reported as verified without looking at its
//     certificate (inline, or read from the feed of one named by
//     reference) past its statement, whose output and reductions it
//     reports, so that the supervisor's own verification of the artifact
//     is what decides (nothing is run: the digest attacks of issue #26
//     are programs whose native run would not fit the job's memory);
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
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/pluginserver"
	"github.com/cyberia-to/cyber-supervisor/worker"
)

func main() {
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
	if spec.Operation == protocol.OpVerify {
		return l.claimVerified(ctx, req, spec)
	}
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
	dir, err := artifacts.OpenDir(req.WorkDir)
	if err != nil {
		return protocol.Result{}, err
	}
	defer dir.Close()
	info, err := publishLie(dir, hostile.NestedResult(hostile.NestedPairs, spec.Limits.Reductions))
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

// claimVerified reports the job's artifact as verified against every
// expectation, with the output and reductions its statement claims (the
// statement alone is read). A certificate named by reference is read
// whole from the supervisor's feed first (the hostile ones are small).
func (l *liar) claimVerified(ctx context.Context, req protocol.RunRequest, spec *protocol.JobSpec) (protocol.Result, error) {
	prog, err := protocol.ParseBundle(spec.Program.Bundle)
	if err != nil {
		return protocol.Result{}, err
	}
	artifact, digest := spec.Artifact, sha256.Sum256(spec.Artifact)
	if spec.ArtifactRef != nil {
		if artifact, err = readFeed(ctx, req.WorkDir, spec.ArtifactRef.Size); err != nil {
			return protocol.Result{}, err
		}
		digest = spec.ArtifactRef.SHA256
	}
	st, err := l.Worker.ReadStatement(artifact, spec.Limits.Reductions)
	if err != nil {
		return protocol.Result{}, err
	}
	return protocol.Result{
		Contract: protocol.ContractV1, JobID: spec.JobID, Attempt: req.Attempt, Profile: spec.Profile,
		ProgramIdentity: prog.Identity(), Kind: protocol.KindVerification,
		Output: st.Outputs, Reductions: st.Reductions, Budget: spec.Limits.Reductions,
		Verification: &protocol.Verification{ArtifactSHA256: digest,
			Checked: protocol.Expectations{Program: true, Inputs: true, ExpectedOutput: true, Budget: true}},
	}, nil
}

// readFeed reads the certificate the supervisor feeds into the work dir,
// at most size bytes.
func readFeed(ctx context.Context, workDir string, size uint64) ([]byte, error) {
	dir, err := artifacts.OpenDir(workDir)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	feed, err := dir.OpenFeedReader(protocol.CertificateFeedName, ctx.Done())
	if err != nil {
		return nil, err
	}
	defer feed.Close()
	return io.ReadAll(io.LimitReader(feed, int64(min(size, 1<<30))))
}

// publishLie publishes the lie as an honest worker publishes a
// certificate: into the supervisor's stream when the work dir holds one
// (a jailed worker), as a file otherwise.
func publishLie(dir *artifacts.Dir, certificate []byte) (artifacts.Info, error) {
	f, err := dir.OpenStream(protocol.ArtifactStreamName)
	if errors.Is(err, artifacts.ErrNotFound) {
		return dir.PublishCompressed(worker.ArtifactName, certificate, 1<<20)
	}
	if err != nil {
		return artifacts.Info{}, err
	}
	defer f.Close()
	b := artifacts.Compress(nil, certificate)
	if _, err := f.Write(b); err != nil {
		return artifacts.Info{}, err
	}
	if err := f.Close(); err != nil {
		return artifacts.Info{}, err
	}
	sum := sha256.Sum256(b)
	return artifacts.Info{Name: worker.ArtifactName, Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}, nil
}
