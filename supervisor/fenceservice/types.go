package fenceservice

import (
	"encoding/json"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// The requests and replies of the fencing operations: the bodies and
// answers of the API's fencing routes (docs/fencing.md, "API"), and what
// the CLI gets back whether a daemon owns the home or not. Every u64 is a
// decimal string; acts are named by name or by tag. golden_test.go pins
// each type's JSON. The records in them are the API's own (apitypes,
// fencing.go), converted in convert.go, never the store's.

// NeuronInitBody is POST /v1/neuron.
type NeuronInitBody struct {
	Network string `json:"network"`
}

// NeuronReply is the neuron: its root, current grant, and the descriptor
// of this boot's embedded worker (which `placement bind` binds).
type NeuronReply struct {
	Root   *apitypes.Root            `json:"root"`
	Grant  *apitypes.Grant           `json:"grant"`
	Worker protocol.WorkerDescriptor `json:"worker"`
}

// PolicyBody is POST /v1/neuron/policy.
type PolicyBody struct {
	Policy neuron.Particle `json:"policy"`
	Epoch  uint64          `json:"epoch,string"`
}

// GrantBody is PUT /v1/grant: the CAS from Revision to the next.
type GrantBody struct {
	Revision uint64   `json:"revision,string"`
	Acts     []string `json:"acts"`
	// Progs limits the grant to these progs; absent (null): every prog.
	Progs    []string `json:"progs"`
	Disabled bool     `json:"disabled"`
}

// PlacementBody is POST /v1/placement/bind and /release: the expected
// current generation.
type PlacementBody struct {
	Generation uint64 `json:"generation,string"`
}

// ProgBody is POST /v1/progs: a ProgramBundle (a .nox file wrapped) and
// the prog's settings (0: the defaults).
type ProgBody struct {
	Bundle      json.RawMessage `json:"bundle"`
	Acts        []string        `json:"acts"`
	StepLimit   uint64          `json:"step_limit,string"`
	MaxInFlight uint64          `json:"max_inflight,string"`
}

// ProgReply is its answer: 201 with created, 200 for the same prog again.
type ProgReply struct {
	Prog    *apitypes.Prog `json:"prog"`
	Created bool           `json:"created"`
}

// UpgradeBody is POST /v1/progs/{id}/upgrade: the CAS from Revision
// to the next, with the new revision's bundle and settings (acts absent
// or null: the current revision's; a 0 bound: the current one).
type UpgradeBody struct {
	Revision    uint64          `json:"revision,string"`
	Bundle      json.RawMessage `json:"bundle"`
	Acts        []string        `json:"acts"`
	StepLimit   uint64          `json:"step_limit,string"`
	MaxInFlight uint64          `json:"max_inflight,string"`
}

// InvokeBody is POST /v1/invocations. Parent makes the invocation a
// child of that live invocation, running on Steps its parent delegates
// (0 or absent: as many as the parent has free, at most the prog's
// step limit); Steps without a parent is refused.
type InvokeBody struct {
	Prog   string        `json:"prog"`
	Inputs apitypes.U64s `json:"inputs"`
	Parent string        `json:"parent,omitempty"`
	Steps  uint64        `json:"steps,string,omitempty"`
}

// ReconcileBody is POST /v1/operations/{id}/reconcile: exactly one of
// Value (a noun in nox text) and Failed (a message).
type ReconcileBody struct {
	Attempt uint32  `json:"attempt"`
	Value   *string `json:"value"`
	Failed  *string `json:"failed"`
}

// ReconcileReply is its answer.
type ReconcileReply struct {
	Outcome  *apitypes.Outcome `json:"outcome"`
	Recorded bool              `json:"recorded"`
}

// ActInfo is one registered act (GET /v1/acts).
type ActInfo struct {
	Name string `json:"name"`
	Tag  uint64 `json:"tag,string"`
	Hex  string `json:"hex"`
}

// InvocationReply is an invocation with its operations.
type InvocationReply = apitypes.InvocationReply

// OperationReply is an operation with its attempts.
type OperationReply = apitypes.OperationReply
