package main

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/spf13/pflag"

	"github.com/cyberia-to/cyber-supervisor/internal/certprofile"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// inputHelp is what INPUT may be, for the help of run and submit.
const inputHelp = `INPUT is a nox program: a raw formula in a .nox file (wrapped into a
minimal ProgramBundle) or a ProgramBundle in a .json file. INPUT,
--input-file and --artifact must each name a regular file (not a symlink,
a FIFO or a device); they are read without following a final symlink and
bounded in size (docs/protocol.md §7).`

// jobFlags are the flags that describe a job, shared by run and submit.
type jobFlags struct {
	op          *enumValue
	inputValues string
	inputFile   string
	budget      budgetValue
	memory      sizeValue
	wall        limitDuration
	artifact    string
	artifactRef bool
	artifactCap sizeValue
	expect      string
	expectFlag  *pflag.Flag // whether --expect was given (empty is a mistake)
	retries     *intRange
	priority    *intRange
	jobID       string
	profile     *enumValue
}

func (f *jobFlags) register(fs *pflag.FlagSet) {
	f.op = newEnum("execute", "execute", "prove", "verify")
	f.retries = newIntRange(0, supervisor.MaxAttemptsLimit-1)
	f.priority = priorityRange()
	fs.Var(f.op, "op", "operation: execute, prove or verify")
	// "" is the default: v2 for prove, the certificate's own for verify,
	// v1 for execute (which makes no certificate).
	f.profile = newEnum("", "v2", "v1", protocol.ProfilePublicTraceV2, protocol.ProfilePublicTrace)
	fs.Var(f.profile, "profile", "certificate profile: v2 or v1 (default: v2 for prove, the certificate's for verify)")
	fs.StringVar(&f.inputValues, "input-values", "", "public inputs V1,V2,... (canonical field values)")
	fs.StringVar(&f.inputFile, "input-file", "", "public inputs as a joy input file (schema v1)")
	f.budget.n = 1_000_000
	fs.Var(&f.budget, "budget", "reduction budget: at most N reductions, at least 1")
	fs.Var(&f.memory, "memory", "hard memory limit of the worker, e.g. 64MiB (default: the supervisor's --default-memory)")
	fs.Var(&f.wall, "time", "wall-clock limit, e.g. 5s, whole milliseconds; the worker is killed after it (default: the supervisor's --default-time)")
	fs.StringVar(&f.artifact, "artifact", "", "certificate to check (--op verify)")
	fs.BoolVar(&f.artifactRef, "artifact-by-ref", false, "store the certificate in the home and name it by reference (default: only when over 32 MiB)")
	fs.Var(&f.artifactCap, "artifact-limit", "cap of the produced or checked artifact, e.g. 32MiB (default: 32MiB)")
	fs.StringVar(&f.expect, "expect", "", "expected output V1,V2,... (checked against the verified result)")
	f.expectFlag = fs.Lookup("expect")
	fs.Var(f.retries, "retries", "extra attempts after a retryable failure (default: the daemon's --default-retries, 0 for run's own)")
	fs.Var(f.priority, "priority", "higher runs first (default: 0)")
	fs.StringVar(&f.jobID, "job-id", "", "job id (default: generated)")
}

// check refuses flag combinations before anything is read or started.
func (f *jobFlags) check() error {
	switch {
	case f.inputValues != "" && f.inputFile != "":
		return usagef("--input-values and --input-file exclude each other")
	case f.op.value == "verify" && f.artifact == "":
		return usagef("--op verify needs --artifact CERT")
	case f.op.value != "verify" && f.artifact != "":
		return usagef("--artifact goes with --op verify")
	case f.artifactRef && f.artifact == "":
		return usagef("--artifact-by-ref goes with --artifact")
	case f.artifactCap.bytes > protocol.MaxArtifactBytes:
		return usagef("--artifact-limit: at most %s", protocol.FormatBytes(protocol.MaxArtifactBytes))
	}
	return nil
}

// spec builds and encodes the job spec for INPUT. A verify job's
// certificate over inlineArtifactBytes (or any, with --artifact-by-ref)
// is stored in the home homeFlag resolves to and named by reference.
func (f *jobFlags) spec(input, homeFlag string) ([]byte, error) {
	bundle, err := readBundle(input)
	if err != nil {
		return nil, err
	}
	inputs := []uint64{}
	switch {
	case f.inputValues != "":
		if inputs, err = protocol.ParseValues(f.inputValues); err != nil {
			return nil, prefixErr("--input-values", err)
		}
	case f.inputFile != "":
		if inputs, err = protocol.ReadInputFile(f.inputFile); err != nil {
			return nil, err
		}
	}
	spec := protocol.JobSpec{
		Contract: protocol.ContractV1, JobID: f.jobID, Operation: protocol.Operation(f.op.value),
		Profile: protocol.ProfilePublicTrace, Program: protocol.ProgramSpec{Bundle: bundle},
		Inputs: inputs,
		Limits: protocol.Limits{Reductions: f.budget.n, WallTimeMS: uint64(f.wall.d.Milliseconds()),
			MemoryBytes: f.memory.bytes, ArtifactBytes: f.artifactCap.bytes},
	}
	if spec.JobID == "" {
		spec.JobID = newJobID()
	}
	if f.expectFlag.Changed {
		// Given empty, it is a mistake, not "no expectation": a nox output
		// has at least one atom (nox-worker's --claim says the same).
		if f.expect == "" {
			return nil, protocol.Errorf(protocol.CodeInvalidJob, "--expect needs at least one value")
		}
		if spec.ExpectedOutput, err = protocol.ParseValues(f.expect); err != nil {
			return nil, prefixErr("--expect", err)
		}
	}
	var fileProfile string
	if f.artifact != "" {
		limit := int64(protocol.DefaultArtifactBytes)
		if f.artifactCap.bytes != 0 {
			limit = int64(f.artifactCap.bytes)
		}
		if f.artifactRef || artifactSize(f.artifact) > inlineArtifactBytes {
			// By reference: stored in the home, streamed.
			if spec.ArtifactRef, fileProfile, err = storeCertificate(homeFlag, f.artifact, limit); err != nil {
				return nil, err
			}
		} else if spec.Artifact, err = protocol.ReadLocalFile("certificate", f.artifact, limit, protocol.CodeArtifactTooLarge); err != nil {
			return nil, err
		}
	}
	switch {
	case fileProfile != "" && f.profile.value == "":
		spec.Profile = fileProfile
	default:
		if spec.Profile, err = f.jobProfile(spec.Artifact); err != nil {
			return nil, err
		}
	}
	return spec.MarshalJSON()
}

// jobProfile is the one profile the job names: --profile, or by
// default v2 for prove, the profile a verify job's certificate names by
// its magic (the supervisor then checks it under exactly that one), and
// v1 for execute, which makes no certificate.
func (f *jobFlags) jobProfile(artifact []byte) (string, error) {
	if f.profile.value != "" {
		return protocol.ParseProfileFlag(f.profile.value)
	}
	switch protocol.Operation(f.op.value) {
	case protocol.OpProve:
		return protocol.DefaultProveProfile, nil
	case protocol.OpVerify:
		return artifactProfile(certprofile.Detect(artifact))
	}
	return protocol.ProfilePublicTrace, nil
}

func prefixErr(what string, err error) error {
	e := protocol.AsError(err)
	return &protocol.Error{Code: e.Code, Message: what + ": " + e.Message, Retryable: e.Retryable}
}

// retryPolicy is the job's retry policy: --retries N, or without it
// max_attempts 0, which the supervisor that takes the job reads as its
// own default (serve --default-retries; one attempt for run's own).
func (f *jobFlags) retryPolicy() *store.RetryPolicy {
	p := &store.RetryPolicy{Backoff: supervisor.DefaultRetryBackoff, MaxBackoff: supervisor.DefaultRetryMaxBackoff}
	if f.retries.set {
		p.MaxAttempts = uint32(f.retries.v) + 1
	}
	return p
}

// retryRequest is retryPolicy as a submission to the daemon says it.
func (f *jobFlags) retryRequest() *apitypes.RetryRequest {
	p := f.retryPolicy()
	return &apitypes.RetryRequest{MaxAttempts: p.MaxAttempts, BackoffNS: int64(p.Backoff), MaxBackoffNS: int64(p.MaxBackoff), Retryable: p.Retryable}
}

// readBundle reads INPUT by the rule both CLIs share
// (protocol.ReadProgram): a ProgramBundle (.json) as it is, a raw formula
// (.nox) wrapped into a minimal bundle, anything else refused.
func readBundle(input string) ([]byte, error) { return protocol.ReadProgram(input) }

func newJobID() string {
	var b [8]byte
	rand.Read(b[:])
	return "job-" + hex.EncodeToString(b[:])
}
