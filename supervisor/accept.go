package supervisor

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/certprofile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// verification is the node's own record of what it checked. It is stored
// with the attempt and is what acceptance rests on.
type verification struct {
	Kind       protocol.ResultKind `json:"kind"`
	Profile    string              `json:"profile"`
	Particle   string              `json:"program_particle"`
	Verifier   string              `json:"verifier"` // "cert" or "shape" (execute: untrusted local computation)
	Artifact   string              `json:"artifact_sha256,omitempty"`
	Program    bool                `json:"program_checked"`
	Inputs     bool                `json:"inputs_checked"`
	Output     bool                `json:"expected_output_checked"`
	Budget     bool                `json:"budget_checked"`
	Reductions uint64              `json:"reductions,string"`
	Outputs    int                 `json:"outputs"`
}

// attemptResult is an attempt whose worker reported a result: what its
// acceptance needs.
type attemptResult struct {
	a *active
	// spec and prog are the saved job the result is checked against.
	spec *protocol.JobSpec
	prog *savedProgram
	// out holds the result, the wall time and what the worker used.
	out outcome
	// work is where the worker wrote the artifact (nil: no dir to read);
	// keep is the sandbox a verified certificate is kept in (keeping).
	work *artifacts.Dir
	keep *attemptSandbox
	// ours: work is keep's dir, holding a certificate the supervisor
	// wrote there itself (keeping.ours).
	ours bool
	log  interface{ Warn(string, ...any) }
}

// accept runs the acceptance sequence on a produced result: validate the
// result against the saved job, verify the artifact with the node's own
// verifier, compare the authenticated statement with the saved job, and
// record acceptance and its effect in one transaction. It reports whether
// the sandbox (holding the accepted artifact) is kept. The artifact is
// read from the worker's work dir, streamed, and the bytes verified are
// kept in r.keep (see keeping, verifyProduced).
func (s *Supervisor) accept(ctx context.Context, r attemptResult) bool {
	a, spec, prog, out, log := r.a, r.spec, r.prog, r.out, r.log
	res := out.result
	produced, _ := res.MarshalJSON()
	if err := s.transition(ctx, a, lifecycle.Produced, "worker produced a result", func(at *store.Attempt, _ time.Time) {
		at.Produced = produced
		if res.Artifact != nil {
			at.Artifact = res.Artifact.Name
			at.ArtifactDigest = hex.EncodeToString(res.Artifact.SHA256[:])
		}
	}); err != nil {
		// The job was ended meanwhile (cancel raced the result): the result
		// is late and discarded.
		log.Warn("result discarded", "err", err)
		return false
	}
	if s.hooks.afterProduced != nil {
		s.hooks.afterProduced(a.job.ID, a.n)
	}
	keep := &keeping{s: s, sb: r.keep, work: r.work, ours: r.ours}
	final, rec, perr := s.verify(ctx, spec, prog, a.n, res, r.work, keep)
	if perr != nil {
		out.result, out.err, out.state = nil, perr, lifecycle.Rejected
		if keep.err != nil {
			// The node could not keep it: not the certificate's fault.
			out.state = lifecycle.Failed
		}
		s.finish(ctx, a, out)
		return false
	}
	if perr := keep.commit(); perr != nil {
		out.result, out.err, out.state = nil, perr, lifecycle.Failed
		s.finish(ctx, a, out)
		return false
	}
	final.Telemetry = protocol.Telemetry{WallTimeMS: uint64(out.wall.Milliseconds()), CPUTimeMS: uint64(out.exit.CPUTime.Milliseconds()), PeakMemoryBytes: out.exit.PeakMemory}
	recJSON, _ := json.Marshal(rec)
	finalJSON, err := final.MarshalJSON()
	if err != nil {
		out.result, out.err, out.state = nil, protocol.Errorf(protocol.CodeInternalError, "encode result: %v", err), lifecycle.Rejected
		s.finish(ctx, a, out)
		return false
	}
	if err := s.transition(ctx, a, lifecycle.Verified, "verified by the node ("+rec.Verifier+")", func(at *store.Attempt, _ time.Time) {
		at.Verified = recJSON
	}); err != nil {
		log.Warn("result discarded", "err", err)
		return false
	}
	var id identity
	invoked := time.Now()
	err = s.updateAttempt(ctx, a, func(tx store.Tx) error {
		id = s.txIdent(tx)
		at, err := tx.Attempt(a.job.ID, a.n)
		if err != nil {
			return err
		}
		job, err := tx.Job(a.job.ID)
		if err != nil {
			return err
		}
		if job.CancelRequested {
			return fmt.Errorf("%w: cancelled before acceptance", errLate)
		}
		now := s.now()
		at.State, at.Ended = lifecycle.Accepted, now
		at.Telemetry = store.Telemetry{WallTime: out.wall, CPUTime: out.exit.CPUTime, PeakMemory: out.exit.PeakMemory}
		if err := tx.PutAttempt(at); err != nil {
			return err
		}
		job.State, job.Accepted, job.Result, job.Updated, job.Error = lifecycle.Accepted, a.n, finalJSON, now, nil
		if err := tx.PutJob(job); err != nil {
			return err
		}
		return tx.AppendEvent(store.Event{Job: job.ID, Time: now, Attempt: a.n, Host: id.host, From: lifecycle.Verified, To: lifecycle.Accepted, Reason: acceptReason(final.Kind)})
	})
	if err != nil {
		if errors.Is(err, errLate) {
			out.result, out.err, out.state = nil, protocol.Errorf(protocol.CodeCancelled, "cancelled before acceptance"), lifecycle.Rejected
			s.event(a, "verified result discarded: the job was cancelled")
			s.finish(ctx, a, out)
		} else {
			log.Warn("record acceptance", "err", err)
		}
		// An acceptance that may have committed keeps its certificate:
		// the next boot's recovery keeps it if the job is accepted.
		return errors.Is(err, store.ErrOutcomeUnknown) && final.Kind == protocol.KindExecutionCertificate
	}
	s.history("accept", a.job.ID, a.n, id, invoked)
	s.frozen.ended(a.job.ID)
	s.metrics.finished(lifecycle.Accepted)
	s.changes.notify(a.job.ID)
	return final.Kind == protocol.KindExecutionCertificate
}

var errLate = errors.New("late result")

func acceptReason(k protocol.ResultKind) string {
	if k == protocol.KindExecution {
		return "accepted as a local computation (not a certificate)"
	}
	return "accepted: " + string(k) + " verified against the saved job"
}

// verify is steps 2–4 of the acceptance sequence. Output and cost of a
// certificate come only from what the node verified, never from the
// worker's report. prog is the saved program as admission derived it, or
// nil to derive it from the saved bundle here. A produced certificate is
// read from dir as it is verified and copied into keep (nil: not kept),
// uncommitted: the caller commits or aborts it.
func (s *Supervisor) verify(ctx context.Context, spec *protocol.JobSpec, prog *savedProgram, n uint32, res *protocol.Result, dir *artifacts.Dir, keep *keeping) (protocol.Result, verification, *protocol.Error) {
	if prog == nil {
		p, err := protocol.ParseBundle(spec.Program.Bundle)
		if err != nil {
			return protocol.Result{}, verification{}, protocol.Errorf(protocol.CodeInternalError, "read frozen bundle: %v", err)
		}
		prog = &savedProgram{tokens: p.Tokens, identity: p.Identity()}
	}
	saved := prog.identity
	want := protocol.KindFor(spec.Operation)
	switch {
	case res.Contract != protocol.ContractV1, res.JobID != spec.JobID, res.Attempt != n:
		return reject(protocol.CodeClaimMismatch, "result names another contract, job or attempt")
	case res.Profile != spec.Profile:
		return reject(protocol.CodeClaimMismatch, "result profile %q, the job asked for %q", res.Profile, spec.Profile)
	case res.Kind != want:
		// Native execution never satisfies a certificate request.
		return reject(protocol.CodeClaimMismatch, "result kind %s, the job needs %s", res.Kind, want)
	case res.ProgramIdentity.Particle != saved.Particle:
		return reject(protocol.CodeClaimMismatch, "result program identity differs from the saved bundle")
	}
	expect := cert.Expect{Program: prog.tokens, Inputs: spec.Inputs, Output: spec.ExpectedOutput, Budget: spec.Limits.Reductions}
	rec := verification{Kind: want, Profile: spec.Profile, Particle: hex.EncodeToString(saved.Particle[:])}
	final := protocol.Result{Contract: protocol.ContractV1, JobID: spec.JobID, Attempt: n, Profile: spec.Profile,
		ProgramIdentity: saved, Kind: want, Budget: spec.Limits.Reductions}
	switch spec.Operation {
	case protocol.OpExecute:
		// Untrusted local computation: checked for shape and against the
		// saved expectations, never presented as a certificate.
		if res.Budget != spec.Limits.Reductions || res.Reductions > res.Budget {
			return reject(protocol.CodeClaimMismatch, "result budget or reductions inconsistent with the job")
		}
		if spec.ExpectedOutput != nil && !slices.Equal(res.Output, spec.ExpectedOutput) {
			return reject(protocol.CodeClaimMismatch, "output differs from the expected output")
		}
		rec.Verifier, rec.Budget, rec.Output = "shape", true, spec.ExpectedOutput != nil
		rec.Reductions, rec.Outputs = res.Reductions, len(res.Output)
		final.Output, final.Reductions = res.Output, res.Reductions
		return final, rec, nil
	case protocol.OpProve:
		if res.Artifact == nil {
			return reject(protocol.CodeProofRejected, "no certificate was produced")
		}
		if dir == nil {
			return reject(protocol.CodeProofRejected, "certificate unreadable: the attempt has no work dir")
		}
		st, checked, size, perr := s.verifyProduced(ctx, spec.Profile, res.Artifact, dir, keep, expect, spec.Limits)
		if perr != nil {
			return protocol.Result{}, verification{}, perr
		}
		rec.fill("cert", res.Artifact.SHA256, checked, st)
		final.Output, final.Reductions = st.Outputs, st.Reductions
		final.Artifact = &protocol.ArtifactRef{Name: res.Artifact.Name, Size: uint64(size), SHA256: res.Artifact.SHA256}
		return final, rec, nil
	default: // verify: the node checks the job's certificate itself
		st, checked, sum, perr := s.verifySpecCertificate(ctx, spec, expect)
		if perr != nil {
			return protocol.Result{}, verification{}, perr
		}
		rec.fill("cert", sum, checked, st)
		final.Output, final.Reductions = st.Outputs, st.Reductions
		final.Verification = &protocol.Verification{ArtifactSHA256: sum,
			Checked: protocol.Expectations{Program: checked.Program, Inputs: checked.Inputs, ExpectedOutput: checked.Output, Budget: checked.Budget}}
		return final, rec, nil
	}
}

func (r *verification) fill(verifier string, sum [32]byte, c cert.Checked, st *cert.Statement) {
	r.Verifier, r.Artifact = verifier, hex.EncodeToString(sum[:])
	r.Program, r.Inputs, r.Output, r.Budget = c.Program, c.Inputs, c.Output, c.Budget
	r.Reductions, r.Outputs = st.Reductions, len(st.Outputs)
}

// verifyCertificate decompresses and verifies a certificate for the saved
// job, in this process and within bounds that follow from the job alone,
// whatever the artifact says: its frame may declare at most what the
// job's budget can produce and its memory can hold (cert.MaxEncodedFor,
// the memory limit or, for a job without one, Config.VerifyMemoryBytes);
// it is read as it decompresses, within a bounded window and no further
// than its first failing step; its statement is compared with the job
// before its witness is read, and its node table is bounded by the same
// memory, less what decoding holds (tableMemory). So a hostile artifact
// costs the supervisor at most what an honest one for the same job
// would, at most the job's memory whatever GOMAXPROCS is, and is a
// rejected attempt, nothing more (docs/supervisor.md says why this runs
// in process).
func (s *Supervisor) verifyCertificate(ctx context.Context, profile string, compressed []byte, expect cert.Expect, lim protocol.Limits) (*cert.Statement, cert.Checked, *protocol.Error) {
	return s.verifyOpened(ctx, profile, func(maxRaw int64) (*certprofile.Certificate, error) {
		return certprofile.Open(profile, compressed, maxRaw)
	}, expect, lim)
}

// verifyOpened is verifyCertificate of the certificate open opens, at most
// maxRaw bytes of content: from memory (certprofile.Open) or read from
// its file as it decompresses (certprofile.OpenReader, verifyProduced).
// The certificate is read to its end: a verification that passes has
// seen every byte of it.
func (s *Supervisor) verifyOpened(ctx context.Context, profile string, open func(maxRaw int64) (*certprofile.Certificate, error), expect cert.Expect, lim protocol.Limits) (*cert.Statement, cert.Checked, *protocol.Error) {
	memory := lim.MemoryBytes
	if memory == 0 {
		memory = s.cfg.VerifyMemoryBytes
	}
	maxRaw := maxCertificateBytes(profile, lim.Reductions, memory)
	raw, err := open(int64(maxRaw))
	if err != nil {
		if errors.Is(err, artifacts.ErrTooLarge) {
			return nil, cert.Checked{}, protocol.Errorf(protocol.CodeArtifactTooLarge, "certificate decompresses beyond the %d bytes its job allows", maxRaw)
		}
		return nil, cert.Checked{}, protocol.Errorf(protocol.CodeProofRejected, "certificate is not a valid zstd frame")
	}
	defer raw.Close()
	// Read as it decompresses: a failing step ends the decompression
	// too. A v2 certificate's size is unknown (raw.Size -1): it is read
	// to its trailer, within maxRaw.
	st, checked, err := cert.VerifyFrom(ctx, raw, raw.Size, expect, cert.BoundsFor(tableMemory(memory, raw.Window)))
	if err == nil {
		// VerifyFrom saw its content end; the decompressor's end is the
		// frame's and its file's (nothing after it).
		var one [1]byte
		switch n, rerr := raw.Read(one[:]); {
		case n != 0 || rerr == nil:
			err = errors.New("content after the certificate's end")
		case !errors.Is(rerr, io.EOF):
			err = rerr
		}
	}
	switch {
	case err == nil:
		return st, checked, nil
	case errors.Is(err, artifacts.ErrTooLarge):
		return nil, cert.Checked{}, protocol.Errorf(protocol.CodeArtifactTooLarge, "certificate decompresses beyond the %d bytes its job allows", maxRaw)
	case errors.Is(err, artifacts.ErrCorrupt):
		return nil, cert.Checked{}, protocol.Errorf(protocol.CodeProofRejected, "certificate is not a valid zstd frame")
	case errors.Is(err, cert.ErrMismatch):
		return nil, cert.Checked{}, protocol.Errorf(protocol.CodeClaimMismatch, "%v", err)
	case errors.Is(err, cert.ErrTooLarge):
		return nil, cert.Checked{}, protocol.Errorf(protocol.CodeArtifactTooLarge, "%v", err)
	case ctx.Err() != nil:
		return nil, cert.Checked{}, protocol.Errorf(protocol.CodeCancelled, "verification stopped: %v", ctx.Err())
	}
	return nil, cert.Checked{}, protocol.Errorf(protocol.CodeProofRejected, "%v", err)
}

// maxCertificateBytes is what a certificate of profile may decompress
// to for a job of budget under memory: v1, what the budget can produce
// (cert.MaxEncodedFor) and at most the memory (its prover held it
// whole); v2, what the budget can produce (certprofile.MaxEncodedV2),
// nothing else: prover and verifier stream it in memory that does not
// grow with it, and the job's artifact limit bounds its compressed bytes.
func maxCertificateBytes(profile string, budget, memory uint64) uint64 {
	if profile == protocol.ProfilePublicTraceV2 {
		return certprofile.MaxEncodedV2(budget)
	}
	return min(cert.MaxEncodedFor(budget), memory)
}

// decoderRing is what the decoder holds beyond its window: two blocks
// of at most 128 KiB (artifacts.Decompressor.Window).
const decoderRing = 2 << 17

// tableMemory is the part of a verification's memory that its node table
// may take (cert.BoundsFor; the deferred digest checks are charged to
// the table's nodes): the decoder's window and ring, the verifier's
// window and the statement come out of it first, so that the whole
// verification holds at most memory. They take at most half of it: the
// worker's prover kept a reserve of its own for them, so an honest
// certificate of the job still fits.
func tableMemory(memory uint64, window int64) uint64 {
	held := uint64(window) + decoderRing + uint64(cert.StreamBytes)
	return memory - min(held, memory/2)
}

func reject(code protocol.Code, format string, args ...any) (protocol.Result, verification, *protocol.Error) {
	return protocol.Result{}, verification{}, protocol.Errorf(code, format, args...)
}
