package main

import (
	"encoding/hex"
	"strconv"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// The result objects of the direct commands inside the cyber/cli/v1
// envelope. All u64 quantities are decimal strings. Readers ignore unknown
// result fields, so fields may be added; none may change meaning.

// u64 marshals as a decimal string.
type u64 uint64

func (v u64) MarshalJSON() ([]byte, error) {
	b := append([]byte{'"'}, strconv.FormatUint(uint64(v), 10)...)
	return append(b, '"'), nil
}

func u64s(vs []uint64) []u64 {
	out := make([]u64, len(vs))
	for i, v := range vs {
		out[i] = u64(v)
	}
	return out
}

// programJSON is the program identity: the particle (hemera digest of the
// formula) and the SHA-256 of its canonical tokens.
type programJSON struct {
	Particle     string `json:"particle"`
	TokensSHA256 string `json:"tokens_sha256"`
}

func programOf(id protocol.ProgramIdentity) programJSON {
	return programJSON{Particle: hex.EncodeToString(id.Particle[:]), TokensSHA256: hex.EncodeToString(id.TokensSHA256[:])}
}

type runJSON struct {
	Kind       protocol.ResultKind `json:"kind"`
	Output     []u64               `json:"output"`
	Reductions u64                 `json:"reductions"`
	Budget     u64                 `json:"budget"`
	Profile    string              `json:"profile"`
	Program    programJSON         `json:"program"`
	Inputs     []u64               `json:"inputs"`
	Telemetry  telemetryJSON       `json:"telemetry"`
}

// telemetryJSON is measured, not proven, and kept apart from the
// computation's coordinates.
type telemetryJSON struct {
	WallTimeMS u64 `json:"wall_time_ms"`
}

type artifactJSON struct {
	Path   string `json:"path"`
	Size   u64    `json:"size"`
	SHA256 string `json:"sha256"`
}

type proveJSON struct {
	Kind       protocol.ResultKind `json:"kind"`
	Profile    string              `json:"profile"`
	Artifact   artifactJSON        `json:"artifact"`
	Program    programJSON         `json:"program"`
	Inputs     []u64               `json:"inputs"`
	Output     []u64               `json:"output"`
	Reductions u64                 `json:"reductions"`
	Budget     u64                 `json:"budget"`
	// Disclosure says what the certificate reveals: every intermediate
	// value. It is neither zero-knowledge nor succinct.
	Disclosure    string        `json:"disclosure"`
	ZeroKnowledge bool          `json:"zero_knowledge"`
	Succinct      bool          `json:"succinct"`
	Telemetry     telemetryJSON `json:"telemetry"`
}

const disclosureComplete = "complete_witness"

type verifyJSON struct {
	Kind protocol.ResultKind `json:"kind"`
	// Mode is what kind of verification ran: the certificate was checked
	// step by step (never a re-execution, never a legacy statement).
	Mode       string       `json:"mode"`
	Profile    string       `json:"profile"`
	Artifact   artifactJSON `json:"artifact"`
	Program    programJSON  `json:"program"`
	Inputs     []u64        `json:"inputs"`
	Output     []u64        `json:"output"`
	Reductions u64          `json:"reductions"`
	Budget     u64          `json:"budget"`
	// BudgetBound is --budget: the certificate's budget is at most this.
	BudgetBound u64         `json:"budget_bound"`
	Checked     checkedJSON `json:"checked"`
	// ClaimChecked repeats Checked.Claim where joy's readers look for it.
	ClaimChecked bool `json:"claim_checked"`
}

// checkedJSON says which of the certificate's claims were compared with
// something the user supplied. A false entry was taken from the
// certificate itself: it is authenticated (the certificate proves it) but
// nobody said it was the wanted value.
type checkedJSON struct {
	Program bool `json:"program"`
	Inputs  bool `json:"inputs"`
	Claim   bool `json:"claim"`
	Budget  bool `json:"budget"`
}

type describeJSON struct {
	Capabilities protocol.Capabilities     `json:"capabilities"`
	Descriptor   protocol.WorkerDescriptor `json:"descriptor"`
}
