package protocol

import (
	"encoding/hex"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// Result is what a worker reports for a successful attempt. It is an
// untrusted claim: the supervisor verifies certificates against its saved
// job and takes output and cost only from what it verified. Telemetry is
// kept apart from the computation's coordinates because it is neither
// deterministic nor authenticated.
type Result struct {
	Contract        string
	JobID           string
	Attempt         uint32
	Profile         string
	ProgramIdentity ProgramIdentity
	Kind            ResultKind
	Output          []uint64 // ordered output atoms
	Reductions      uint64   // reductions charged
	Budget          uint64   // the budget the computation ran under
	// Artifact is the produced certificate (execution_certificate only).
	Artifact *ArtifactRef
	// Verification says what was checked (verification only).
	Verification *Verification
	Telemetry    Telemetry
}

// ArtifactRef names an artifact published in the attempt's work directory.
// The name is transport-local, never identity; the digest is what binds.
type ArtifactRef struct {
	Name   string // a ValidName inside the work directory
	Size   uint64
	SHA256 [32]byte // of the bytes on disk
}

// Verification identifies the checked artifact and the exact expectations
// it was checked against.
type Verification struct {
	ArtifactSHA256 [32]byte
	Checked        Expectations
}

// Expectations lists which of the job's expectations a verification
// compared with the certificate's statement. ExpectedOutput is false when
// the job stated no expected output: nothing was claimed, nothing checked.
type Expectations struct {
	Program        bool
	Inputs         bool
	ExpectedOutput bool
	Budget         bool
}

// Telemetry is measured, not proven; 0 means not measured.
type Telemetry struct {
	WallTimeMS      uint64
	CPUTimeMS       uint64
	PeakMemoryBytes uint64
}

type resultWire struct {
	Contract        string            `json:"contract"`
	JobID           string            `json:"job_id"`
	Attempt         decimal           `json:"attempt"`
	Profile         string            `json:"profile"`
	ProgramIdentity identityWire      `json:"program_identity"`
	Kind            ResultKind        `json:"kind"`
	Output          []decimal         `json:"output"`
	Reductions      decimal           `json:"reductions"`
	Budget          decimal           `json:"budget"`
	Artifact        *artifactRefWire  `json:"artifact"`
	Verification    *verificationWire `json:"verification"`
	Telemetry       telemetryWire     `json:"telemetry"`
}

type artifactRefWire struct {
	Name   string  `json:"name"`
	Size   decimal `json:"size"`
	SHA256 string  `json:"sha256"`
}

type verificationWire struct {
	ArtifactSHA256 string           `json:"artifact_sha256"`
	Checked        expectationsWire `json:"checked"`
}

type expectationsWire struct {
	Program        bool `json:"program"`
	Inputs         bool `json:"inputs"`
	ExpectedOutput bool `json:"expected_output"`
	Budget         bool `json:"budget"`
}

type telemetryWire struct {
	WallTimeMS      decimal `json:"wall_time_ms"`
	CPUTimeMS       decimal `json:"cpu_time_ms"`
	PeakMemoryBytes decimal `json:"peak_memory_bytes"`
}

// MarshalJSON writes the result with a fixed key order; absent options are
// null.
func (r Result) MarshalJSON() ([]byte, error) {
	w := resultWire{
		Contract:        r.Contract,
		JobID:           r.JobID,
		Attempt:         decimal(r.Attempt),
		Profile:         r.Profile,
		ProgramIdentity: r.ProgramIdentity.wire(),
		Kind:            r.Kind,
		Output:          decimals(nonNil(r.Output)),
		Reductions:      decimal(r.Reductions),
		Budget:          decimal(r.Budget),
		Telemetry: telemetryWire{
			WallTimeMS:      decimal(r.Telemetry.WallTimeMS),
			CPUTimeMS:       decimal(r.Telemetry.CPUTimeMS),
			PeakMemoryBytes: decimal(r.Telemetry.PeakMemoryBytes),
		},
	}
	if a := r.Artifact; a != nil {
		w.Artifact = &artifactRefWire{Name: a.Name, Size: decimal(a.Size), SHA256: hex.EncodeToString(a.SHA256[:])}
	}
	if v := r.Verification; v != nil {
		w.Verification = &verificationWire{
			ArtifactSHA256: hex.EncodeToString(v.ArtifactSHA256[:]),
			Checked:        expectationsWire(v.Checked),
		}
	}
	return marshalCompact(w)
}

// resultCode is the code of a malformed result: the attempt produced
// nothing usable, and the same worker would produce it again.
const resultCode = CodeExecutionFailed

// Validate checks a result's own consistency (not its truth).
func (r *Result) Validate() error {
	fail := func(format string, args ...any) error {
		return &Error{Code: resultCode, Message: "result: " + fmt.Sprintf(format, args...)}
	}
	switch {
	case r.Contract != ContractV1:
		return fail("contract must be %s", ContractV1)
	case !ValidName(r.JobID):
		return fail("job_id is not a valid job id")
	case r.Attempt == 0:
		return fail("attempt must be at least 1")
	case !SupportedProfile(r.Profile):
		return fail("profile is not one this implementation serves")
	case !r.Kind.Valid():
		return fail("kind must be execution, execution_certificate or verification")
	case r.Profile == ProfileNone && r.Kind != KindExecution:
		return fail("profile %s produces execution results only", ProfileNone)
	case len(r.Output) == 0 || len(r.Output) > MaxResultOutputs:
		return fail("output must have 1..%d atoms", MaxResultOutputs)
	case r.Budget == 0 || r.Budget >= field.P:
		return fail("budget must be above 0 and below p")
	case r.Reductions > r.Budget:
		return fail("reductions exceed the budget")
	}
	for i, v := range r.Output {
		if v >= field.P {
			return fail("output[%d] is not a canonical field element", i)
		}
	}
	switch r.Kind {
	case KindExecution:
		if r.Artifact != nil || r.Verification != nil {
			return fail("an execution result has no artifact and no verification")
		}
	case KindExecutionCertificate:
		if r.Artifact == nil || r.Verification != nil {
			return fail("an execution_certificate result has an artifact and no verification")
		}
	case KindVerification:
		if r.Verification == nil || r.Artifact != nil {
			return fail("a verification result has verification details and no artifact")
		}
	}
	if a := r.Artifact; a != nil {
		if !ValidName(a.Name) {
			return fail("artifact.name is not a valid artifact name")
		}
		if a.Size > MaxArtifactBytes {
			return fail("artifact.size exceeds %d", MaxArtifactBytes)
		}
	}
	return nil
}

var resultTree = treeLimits{maxDepth: 32, maxValues: MaxResultOutputs + 1024}

// ParseResult reads a result as a worker reports it. Unknown keys are
// ignored at every level (workers may add fields); duplicate keys, wrong
// types, non-canonical numbers and inconsistent results are refused with
// execution_failed.
func ParseResult(b []byte) (*Result, error) {
	if len(b) > MaxResultBytes {
		return nil, Errorf(resultCode, "result: %d bytes, at most %d", len(b), MaxResultBytes)
	}
	root, err := decodeTree(b, resultTree, resultCode)
	if err != nil {
		return nil, prefixed("result", err)
	}
	res, err := decodeResult(reader{code: resultCode}, root)
	if err != nil {
		return nil, prefixed("result", err)
	}
	if err := res.Validate(); err != nil {
		return nil, err
	}
	return res, nil
}

func decodeResult(r reader, root *jvalue) (*Result, error) {
	o, err := r.object(root, "$")
	if err != nil {
		return nil, err
	}
	res := new(Result)
	for _, f := range []struct {
		key string
		dst *string
	}{{"contract", &res.Contract}, {"job_id", &res.JobID}, {"profile", &res.Profile}} {
		if *f.dst, err = needString(r, o, f.key); err != nil {
			return nil, err
		}
	}
	kind, err := needString(r, o, "kind")
	if err != nil {
		return nil, err
	}
	res.Kind = ResultKind(kind)
	av, err := o.need("attempt")
	if err != nil {
		return nil, err
	}
	attempt, err := r.u64(av, o.at("attempt"))
	if err != nil {
		return nil, err
	}
	if attempt > 1<<32-1 {
		return nil, r.fail(o.at("attempt"), "exceeds 2^32-1")
	}
	res.Attempt = uint32(attempt)
	iv, err := o.need("program_identity")
	if err != nil {
		return nil, err
	}
	if res.ProgramIdentity, err = r.identity(iv, o.at("program_identity"), false); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		key string
		dst *uint64
	}{{"reductions", &res.Reductions}, {"budget", &res.Budget}} {
		v, err := o.need(f.key)
		if err != nil {
			return nil, err
		}
		if *f.dst, err = r.u64(v, o.at(f.key)); err != nil {
			return nil, err
		}
	}
	ov, err := o.need("output")
	if err != nil {
		return nil, err
	}
	if res.Output, err = r.fieldValues(ov, o.at("output"), MaxResultOutputs); err != nil {
		return nil, err
	}
	if v := o.get("artifact"); v != nil && v.kind != jNull {
		if res.Artifact, err = readArtifactRef(r, v, o.at("artifact")); err != nil {
			return nil, err
		}
	}
	if v := o.get("verification"); v != nil && v.kind != jNull {
		if res.Verification, err = readVerification(r, v, o.at("verification")); err != nil {
			return nil, err
		}
	}
	if v := o.get("telemetry"); v != nil && v.kind != jNull {
		if res.Telemetry, err = readTelemetry(r, v, o.at("telemetry")); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func readArtifactRef(r reader, v *jvalue, path string) (*ArtifactRef, error) {
	o, err := r.object(v, path)
	if err != nil {
		return nil, err
	}
	a := new(ArtifactRef)
	if a.Name, err = needString(r, o, "name"); err != nil {
		return nil, err
	}
	sv, err := o.need("size")
	if err != nil {
		return nil, err
	}
	if a.Size, err = r.u64(sv, o.at("size")); err != nil {
		return nil, err
	}
	dv, err := o.need("sha256")
	if err != nil {
		return nil, err
	}
	if a.SHA256, err = r.hex32(dv, o.at("sha256")); err != nil {
		return nil, err
	}
	return a, nil
}

func readVerification(r reader, v *jvalue, path string) (*Verification, error) {
	o, err := r.object(v, path)
	if err != nil {
		return nil, err
	}
	ver := new(Verification)
	dv, err := o.need("artifact_sha256")
	if err != nil {
		return nil, err
	}
	if ver.ArtifactSHA256, err = r.hex32(dv, o.at("artifact_sha256")); err != nil {
		return nil, err
	}
	cv, err := o.need("checked")
	if err != nil {
		return nil, err
	}
	co, err := r.object(cv, o.at("checked"))
	if err != nil {
		return nil, err
	}
	c := &ver.Checked
	for _, f := range []struct {
		key string
		dst *bool
	}{{"program", &c.Program}, {"inputs", &c.Inputs}, {"expected_output", &c.ExpectedOutput}, {"budget", &c.Budget}} {
		bv, err := co.need(f.key)
		if err != nil {
			return nil, err
		}
		if *f.dst, err = r.boolean(bv, co.at(f.key)); err != nil {
			return nil, err
		}
	}
	return ver, nil
}

func readTelemetry(r reader, v *jvalue, path string) (Telemetry, error) {
	var t Telemetry
	o, err := r.object(v, path)
	if err != nil {
		return t, err
	}
	for _, f := range []struct {
		key string
		dst *uint64
	}{{"wall_time_ms", &t.WallTimeMS}, {"cpu_time_ms", &t.CPUTimeMS}, {"peak_memory_bytes", &t.PeakMemoryBytes}} {
		if fv := o.get(f.key); fv != nil {
			if *f.dst, err = r.u64(fv, o.at(f.key)); err != nil {
				return t, err
			}
		}
	}
	return t, nil
}
