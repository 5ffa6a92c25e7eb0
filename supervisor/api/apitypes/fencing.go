package apitypes

import (
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// The fencing side's records as the API shows them (docs/fencing.md,
// "API"): the neuron's root and grant, progs, invocations, operations
// and their attempts. Their JSON is the one these replies had when they
// were the store's records (the keys, the decimal strings, the byte
// fields in base64, an operation's stage a number), so that clients saw
// no change when the API got types of its own; supervisor/fenceservice
// converts each record field by field.

// Root is the neuron's root: who owns the home's work, under which
// policy and epoch, and which worker may dispatch (Generation, Worker).
type Root struct {
	Neuron    neuron.ID        `json:"neuron"`
	PublicKey neuron.PublicKey `json:"public_key"`
	Profile   string           `json:"profile"`
	Network   string           `json:"network"`
	Policy    neuron.Particle  `json:"policy"`
	Epoch     uint64           `json:"epoch,string"`
	// Generation is the placement generation (0: no worker was ever
	// bound); Worker is nil when none is bound.
	Generation uint64                     `json:"generation,string"`
	Worker     *protocol.WorkerDescriptor `json:"worker"`
	Updated    time.Time                  `json:"updated"`
	// Records is how the home's fencing records are authenticated
	// ("hmac-sha256/1"; left out for a root from before schema 7).
	Records   string `json:"records,omitempty"`
	Signature Hex    `json:"signature"`
}

// Grant is what the neuron permits: acts, and progs (null: every prog,
// []: none).
type Grant struct {
	Neuron    neuron.ID       `json:"neuron"`
	Network   string          `json:"network"`
	Policy    neuron.Particle `json:"policy"`
	Epoch     uint64          `json:"epoch,string"`
	Revision  uint64          `json:"revision,string"`
	Enabled   bool            `json:"enabled"`
	Acts      U64s            `json:"acts"`
	Progs     []string        `json:"progs"`
	Created   time.Time       `json:"created"`
	Signature Hex             `json:"signature"`
}

// Prog is an installed program at its current revision. State is one
// of installed, active, paused, retiring, retired.
type Prog struct {
	ID          string          `json:"id"`
	Neuron      neuron.ID       `json:"neuron"`
	Revision    uint64          `json:"revision,string"`
	Environment string          `json:"environment"`
	Program     []byte          `json:"program"`
	Particle    neuron.Particle `json:"particle"`
	Name        string          `json:"name,omitempty"`
	State       string          `json:"state"`
	StepLimit   uint64          `json:"step_limit,string"`
	MaxInFlight uint64          `json:"max_inflight,string"`
	Acts        U64s            `json:"acts"`
	Created     time.Time       `json:"created"`
	Updated     time.Time       `json:"updated"`
}

// Invocation is one run of a prog. Its lifecycle is status (running,
// waiting, completed, failed, cancelled, conflict), the fencing layer's
// name since its first release.
type Invocation struct {
	ID           string          `json:"id"`
	Seq          uint64          `json:"seq,string"`
	Neuron       neuron.ID       `json:"neuron"`
	Network      string          `json:"network"`
	Prog         string          `json:"prog"`
	ProgRevision uint64          `json:"prog_revision,string"`
	Inputs       U64s            `json:"inputs"`
	Epoch        uint64          `json:"epoch,string"`
	Status       string          `json:"status"`
	Parent       string          `json:"parent,omitempty"`
	Limit        uint64          `json:"limit,string"`
	Charged      uint64          `json:"charged,string"`
	Delegated    uint64          `json:"delegated,string,omitempty"`
	Held         uint64          `json:"held,string"`
	Ordinal      uint64          `json:"ordinal,string"`
	Pending      string          `json:"pending,omitempty"`
	Result       []byte          `json:"result,omitempty"`
	Output       U64s            `json:"output,omitempty"`
	Error        *protocol.Error `json:"error,omitempty"`
	Created      time.Time       `json:"created"`
	Updated      time.Time       `json:"updated"`
}

// InvocationReply is an invocation with its operations, its open step
// reservation (null: none) and its children.
type InvocationReply struct {
	Invocation
	Archived    bool             `json:"archived"`
	Reservation *Reservation     `json:"reservation"`
	Operations  []OperationReply `json:"operations"`
	Children    []string         `json:"children"`
	// Idle is set by a wait: no drive of the invocation was queued or
	// running when it was read.
	Idle bool `json:"idle,omitempty"`
}

// Operation is a suspended act of an invocation. Stage is a number
// (0 proposed, 1 attempted, 2 outcome, 3 consumed) as it always was;
// OperationReply adds its name.
type Operation struct {
	ID         string          `json:"id"`
	Neuron     neuron.ID       `json:"neuron"`
	Network    string          `json:"network"`
	Prog       string          `json:"prog"`
	Invocation string          `json:"invocation"`
	Ordinal    uint64          `json:"ordinal,string"`
	Tag        uint64          `json:"tag,string"`
	Argument   []byte          `json:"argument"`
	Policy     neuron.Particle `json:"policy"`
	Epoch      uint64          `json:"epoch,string"`
	Stage      uint8           `json:"stage"`
	Attempt    uint32          `json:"attempt,omitempty"`
	Created    time.Time       `json:"created"`
	Updated    time.Time       `json:"updated"`
}

// OperationReply is an operation with its stage's name and its
// attempts.
type OperationReply struct {
	Operation
	StageName string             `json:"stage_name"`
	Attempts  []OperationAttempt `json:"attempts"`
}

// ActAttempt is one attempt of an operation, written before any call.
// Executor is neuron/worker/1, manual-reconciliation/1 or
// restored-backup/1.
type ActAttempt struct {
	Operation     string                     `json:"operation"`
	N             uint32                     `json:"n"`
	Neuron        neuron.ID                  `json:"neuron"`
	Network       string                     `json:"network"`
	Prog          string                     `json:"prog"`
	Invocation    string                     `json:"invocation"`
	Tag           uint64                     `json:"tag,string"`
	OpDigest      Hex                        `json:"operation_digest"`
	Executor      string                     `json:"executor"`
	Worker        *protocol.WorkerDescriptor `json:"worker"`
	Generation    uint64                     `json:"generation,string"`
	Policy        neuron.Particle            `json:"policy"`
	Epoch         uint64                     `json:"epoch,string"`
	Created       time.Time                  `json:"created"`
	Authorization Hex                        `json:"authorization"`
}

// OperationAttempt is an attempt with its claim and outcome (each null
// when there is none). Unknown: it has no outcome, so it may have run,
// and only reconciliation resolves it.
type OperationAttempt struct {
	ActAttempt
	Claim   *ActClaim `json:"claim"`
	Outcome *Outcome  `json:"outcome"`
	Unknown bool      `json:"unknown"`
}

// ActClaim is the one-use dispatch claim of an act's attempt (a job
// attempt's is Claim).
type ActClaim struct {
	Operation  string                    `json:"operation"`
	Attempt    uint32                    `json:"attempt"`
	Generation uint64                    `json:"generation,string"`
	Worker     protocol.WorkerDescriptor `json:"worker"`
	Created    time.Time                 `json:"created"`
	Signature  Hex                       `json:"signature"`
}

// Outcome is the definite result of one attempt: Kind value (Value, a
// noun's canonical tokens) or failed (Message). Source is act or
// reconcile.
type Outcome struct {
	Operation string    `json:"operation"`
	Attempt   uint32    `json:"attempt"`
	Kind      string    `json:"kind"`
	Value     []byte    `json:"value,omitempty"`
	Message   string    `json:"message,omitempty"`
	Source    string    `json:"source"`
	Recorded  time.Time `json:"recorded"`
}

// Reservation is an invocation's open VM step reservation.
type Reservation struct {
	Invocation string    `json:"invocation"`
	Steps      uint64    `json:"steps,string"`
	Base       uint64    `json:"base,string"`
	Boot       string    `json:"boot"`
	Created    time.Time `json:"created"`
}
