package protocol

import (
	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// JobSpec is a job as submitted: immutable once admitted. There is no
// secret and no state field: the contract's public stateless profile
// refuses both, and a field that must always be empty is a field someone
// will eventually fill.
type JobSpec struct {
	Contract  string // ContractV1
	JobID     string // [A-Za-z0-9._-]{1,128}, no leading dot
	Operation Operation
	Profile   string // exact profile id
	Program   ProgramSpec
	Inputs    []uint64 // ordered public inputs, each < p
	// ExpectedOutput is the output the job expects, or nil for none. Every
	// nox result has at least one atom, so an empty list is refused rather
	// than carried as a third meaning.
	ExpectedOutput []uint64
	Limits         Limits
	// Artifact is the certificate to check, inline; ArtifactRef names it
	// by content instead (stored outside the spec). A verify job has
	// exactly one of them, other jobs neither.
	Artifact    []byte
	ArtifactRef *CertificateRef
}

// ProgramSpec is the job's program: the frozen bundle bytes and, optionally,
// the identity the submitter expects them to have. The identity is always
// derived from the bytes; a declared one must match.
type ProgramSpec struct {
	Bundle   []byte
	Identity *ProgramIdentity
}

// secretKeys are refused as unsupported_secret rather than as unknown keys:
// the request is understood, and refused on purpose.
var secretKeys = []string{"secret", "secrets", "witness", "witnesses"}

var jobSpecKeys = []string{
	"contract", "job_id", "operation", "profile", "program", "inputs",
	"expected_output", "state_context", "limits", "artifact_ref", "artifact",
}

// jobSpecTree bounds a job spec's JSON; 16384 values leave room for 4096
// expected outputs while keeping a hostile spec's tree small.
var jobSpecTree = treeLimits{maxDepth: 16, maxValues: 1 << 14}

type jobSpecWire struct {
	Contract       string      `json:"contract"`
	JobID          string      `json:"job_id"`
	Operation      Operation   `json:"operation"`
	Profile        string      `json:"profile"`
	Program        programWire `json:"program"`
	Inputs         []decimal   `json:"inputs"`
	ExpectedOutput []decimal   `json:"expected_output"`
	StateContext   *struct{}   `json:"state_context"`
	Limits         limitsWire  `json:"limits"`
	// ArtifactRef is omitted when absent, so that the canonical form of
	// every spec without one (and its digest, which job-id reuse and the
	// store's records are judged by) is what it was before the key
	// existed. Artifact stays the last key (jobspec_json.go).
	ArtifactRef *certificateRefWire `json:"artifact_ref,omitempty"`
	Artifact    []byte              `json:"artifact"`
}

type programWire struct {
	Bundle   []byte        `json:"bundle"`
	Identity *identityWire `json:"identity,omitempty"`
}

type limitsWire struct {
	Reductions    decimal `json:"reductions"`
	WallTimeMS    decimal `json:"wall_time_ms"`
	MemoryBytes   decimal `json:"memory_bytes"`
	ArtifactBytes decimal `json:"artifact_bytes"`
}

func (l Limits) wire() limitsWire {
	return limitsWire{decimal(l.Reductions), decimal(l.WallTimeMS), decimal(l.MemoryBytes), decimal(l.ArtifactBytes)}
}

// ParseJobSpec reads a job spec strictly and checks everything that does
// not depend on a backend (see Validate); Admit adds the rest. The spec is
// at most MaxJobSpecBytes; unknown or duplicate keys, JSON numbers where
// decimal strings belong and non-canonical values are refused with
// invalid_job naming the JSON path; a secret key with unsupported_secret; a
// non-null state_context with unsupported_state; an unknown or unsupported
// profile with unsupported_profile; an oversize artifact, before it is
// decoded, with artifact_too_large.
func ParseJobSpec(b []byte) (*JobSpec, error) {
	if len(b) > MaxJobSpecBytes {
		return nil, Errorf(CodeInvalidJob, "job spec: %d bytes, at most %d", len(b), MaxJobSpecBytes)
	}
	root, err := decodeTree(b, jobSpecTree, CodeInvalidJob)
	if err != nil {
		return nil, err
	}
	s, err := decodeJobSpec(root)
	if err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// UnmarshalJSON is ParseJobSpec for callers that embed a JobSpec in their
// own JSON.
func (s *JobSpec) UnmarshalJSON(b []byte) error {
	p, err := ParseJobSpec(b)
	if err != nil {
		return err
	}
	*s = *p
	return nil
}

func decodeJobSpec(root *jvalue) (*JobSpec, error) {
	r := reader{code: CodeInvalidJob}
	o, err := r.object(root, "$")
	if err != nil {
		return nil, err
	}
	for _, k := range secretKeys {
		if o.has(k) {
			return nil, Errorf(CodeUnsupportedSecret, "%s: the public profile takes no secret inputs", o.at(k))
		}
	}
	if err := o.only(jobSpecKeys); err != nil {
		return nil, err
	}
	s := new(JobSpec)
	if s.Contract, err = needString(r, o, "contract"); err != nil {
		return nil, err
	}
	if s.Contract != ContractV1 {
		return nil, Errorf(CodeInvalidJob, "$.contract: must be %s", ContractV1)
	}
	if s.JobID, err = needString(r, o, "job_id"); err != nil {
		return nil, err
	}
	if !ValidName(s.JobID) {
		return nil, Errorf(CodeInvalidJob, "$.job_id: must be 1-128 of [A-Za-z0-9._-], not starting with a dot")
	}
	op, err := needString(r, o, "operation")
	if err != nil {
		return nil, err
	}
	if s.Operation = Operation(op); !s.Operation.Valid() {
		return nil, Errorf(CodeInvalidJob, "$.operation: must be execute, prove or verify")
	}
	if s.Profile, err = needString(r, o, "profile"); err != nil {
		return nil, err
	}
	if err := checkProfile(s.Profile, s.Operation); err != nil {
		return nil, err
	}
	if v := o.get("state_context"); v != nil && v.kind != jNull {
		return nil, Errorf(CodeUnsupportedState, "$.state_context: the public stateless profile requires null")
	}
	lv, err := o.need("limits")
	if err != nil {
		return nil, err
	}
	if s.Limits, err = readLimits(r, lv, o.at("limits")); err != nil {
		return nil, err
	}
	iv, err := o.need("inputs")
	if err != nil {
		return nil, err
	}
	if s.Inputs, err = r.fieldValues(iv, o.at("inputs"), MaxInputs); err != nil {
		return nil, err
	}
	if v := o.get("expected_output"); v != nil && v.kind != jNull {
		if s.ExpectedOutput, err = r.fieldValues(v, o.at("expected_output"), MaxExpectedOutputs); err != nil {
			return nil, err
		}
	}
	// Binary last: their sizes are checked from the base64 length, before
	// anything is decoded.
	if err := readProgram(r, o, s); err != nil {
		return nil, err
	}
	if v := o.get("artifact"); v != nil && v.kind != jNull {
		b64, err := r.text(v, o.at("artifact"))
		if err != nil {
			return nil, err
		}
		n, ok := base64Len(b64)
		if !ok {
			return nil, Errorf(CodeInvalidJob, "$.artifact: not standard padded base64")
		}
		if max := s.Limits.ArtifactCap(); uint64(n) > max || n > MaxArtifactBytes {
			return nil, Errorf(CodeArtifactTooLarge, "$.artifact: %d bytes, at most %d", n, min(max, MaxArtifactBytes))
		}
		if s.Artifact, err = r.base64(b64, o.at("artifact")); err != nil {
			return nil, err
		}
	}
	if v := o.get("artifact_ref"); v != nil && v.kind != jNull {
		if s.Artifact != nil {
			return nil, Errorf(CodeInvalidJob, "%s: a certificate is given inline (artifact) or by reference (artifact_ref), not both", o.at("artifact_ref"))
		}
		if s.ArtifactRef, err = readCertificateRef(r, v, o.at("artifact_ref")); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func readProgram(r reader, o *object, s *JobSpec) error {
	pv, err := o.need("program")
	if err != nil {
		return err
	}
	po, err := r.object(pv, o.at("program"))
	if err != nil {
		return err
	}
	if err := po.only([]string{"bundle", "identity"}); err != nil {
		return err
	}
	bv, err := po.need("bundle")
	if err != nil {
		return err
	}
	b64, err := r.text(bv, po.at("bundle"))
	if err != nil {
		return err
	}
	n, ok := base64Len(b64)
	if !ok {
		return Errorf(CodeInvalidJob, "$.program.bundle: not standard padded base64")
	}
	if n > MaxBundleBytes {
		return Errorf(CodeInvalidJob, "$.program.bundle: %d bytes, at most %d", n, MaxBundleBytes)
	}
	if s.Program.Bundle, err = r.base64(b64, po.at("bundle")); err != nil {
		return err
	}
	if v := po.get("identity"); v != nil && v.kind != jNull {
		id, err := r.identity(v, po.at("identity"), true)
		if err != nil {
			return err
		}
		s.Program.Identity = &id
	}
	return nil
}

func readLimits(r reader, v *jvalue, path string) (Limits, error) {
	var l Limits
	o, err := r.object(v, path)
	if err != nil {
		return l, err
	}
	if err := o.only([]string{"reductions", "wall_time_ms", "memory_bytes", "artifact_bytes"}); err != nil {
		return l, err
	}
	rv, err := o.need("reductions")
	if err != nil {
		return l, err
	}
	if l.Reductions, err = r.u64(rv, o.at("reductions")); err != nil {
		return l, err
	}
	for _, f := range []struct {
		key string
		dst *uint64
	}{{"wall_time_ms", &l.WallTimeMS}, {"memory_bytes", &l.MemoryBytes}, {"artifact_bytes", &l.ArtifactBytes}} {
		if fv := o.get(f.key); fv != nil {
			if *f.dst, err = r.u64(fv, o.at(f.key)); err != nil {
				return l, err
			}
		}
	}
	return l, nil
}

func needString(r reader, o *object, key string) (string, error) {
	v, err := o.need(key)
	if err != nil {
		return "", err
	}
	return r.str(v, o.at(key))
}

// checkProfile accepts exactly the profiles this implementation serves, and
// only for operations they support.
func checkProfile(profile string, op Operation) error {
	switch profile {
	case ProfilePublicTrace, ProfilePublicTraceV2:
		return nil
	case ProfileNone:
		if op != OpExecute {
			return Errorf(CodeUnsupportedProfile, "profile %s has no certificates to %s", ProfileNone, op)
		}
		return nil
	case ProfileZhengV1, ProfileZhengV2, ProfileZhengV3:
		return Errorf(CodeUnsupportedProfile, "profile %s is known but not implemented here; no other profile substitutes for it", profile)
	}
	return Errorf(CodeUnsupportedProfile, "unknown profile; profile ids match exactly, without fallback")
}

// Validate checks the rules of a spec that hold whatever backend runs it:
// the fields ParseJobSpec checks, for specs built in Go. It does not parse
// the bundle; Admit does.
func (s *JobSpec) Validate() error {
	if s.Contract != ContractV1 {
		return Errorf(CodeInvalidJob, "contract must be %s", ContractV1)
	}
	if !ValidName(s.JobID) {
		return Errorf(CodeInvalidJob, "job_id must be 1-128 of [A-Za-z0-9._-], not starting with a dot")
	}
	if !s.Operation.Valid() {
		return Errorf(CodeInvalidJob, "operation must be execute, prove or verify")
	}
	if err := checkProfile(s.Profile, s.Operation); err != nil {
		return err
	}
	l := s.Limits
	if l.Reductions == 0 || l.Reductions >= field.P {
		return Errorf(CodeInvalidJob, "limits.reductions must be above 0 and below p")
	}
	if l.ArtifactBytes > MaxArtifactBytes {
		return Errorf(CodeInvalidJob, "limits.artifact_bytes must be at most %d", MaxArtifactBytes)
	}
	if len(s.Inputs) > MaxInputs {
		return Errorf(CodeInvalidJob, "%d inputs, at most %d", len(s.Inputs), MaxInputs)
	}
	for i, v := range s.Inputs {
		if v >= field.P {
			return Errorf(CodeInvalidJob, "inputs[%d] is not a canonical field element (must be below p)", i)
		}
	}
	if s.ExpectedOutput != nil {
		if len(s.ExpectedOutput) == 0 {
			return Errorf(CodeInvalidJob, "expected_output is empty; a nox output has at least one atom (use null for no expectation)")
		}
		if len(s.ExpectedOutput) > MaxExpectedOutputs {
			return Errorf(CodeInvalidJob, "%d expected outputs, at most %d", len(s.ExpectedOutput), MaxExpectedOutputs)
		}
		for i, v := range s.ExpectedOutput {
			if v >= field.P {
				return Errorf(CodeInvalidJob, "expected_output[%d] is not a canonical field element (must be below p)", i)
			}
		}
	}
	if len(s.Program.Bundle) == 0 {
		return Errorf(CodeInvalidJob, "program.bundle is empty")
	}
	if len(s.Program.Bundle) > MaxBundleBytes {
		return Errorf(CodeInvalidJob, "program.bundle: %d bytes, at most %d", len(s.Program.Bundle), MaxBundleBytes)
	}
	ref := s.ArtifactRef
	switch {
	case s.Artifact != nil && ref != nil:
		return Errorf(CodeInvalidJob, "a certificate is given inline (artifact) or by reference (artifact_ref), not both")
	case s.Operation == OpVerify && len(s.Artifact) == 0 && ref == nil:
		return Errorf(CodeInvalidJob, "a verify job needs an artifact or an artifact_ref")
	case s.Operation != OpVerify && (s.Artifact != nil || ref != nil):
		return Errorf(CodeInvalidJob, "only verify jobs carry an artifact")
	case uint64(len(s.Artifact)) > l.ArtifactCap():
		return Errorf(CodeArtifactTooLarge, "artifact: %d bytes, at most %d", len(s.Artifact), l.ArtifactCap())
	case ref != nil && ref.Size == 0:
		return Errorf(CodeInvalidJob, "artifact_ref.size: a certificate is never empty")
	case ref != nil && ref.Size > l.ArtifactCap():
		return Errorf(CodeArtifactTooLarge, "artifact_ref.size: %d bytes, at most %d", ref.Size, l.ArtifactCap())
	}
	return nil
}
