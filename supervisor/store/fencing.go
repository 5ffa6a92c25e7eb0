package store

import (
	"strconv"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/jsonenc"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// The records of local dispatch and fencing (docs/fencing.md): the neuron
// root, grants, progs, invocations, operations, their attempts, claims and
// outcomes, VM step reservations, and the claims of job attempts. Every
// u64 is written as a decimal string.

// Root is the neuron root: the one record that says who owns this home's
// work, under which policy and epoch, and which worker may dispatch
// (placement generation and descriptor). Signed by the neuron key.
type Root struct {
	Neuron    neuron.ID        `json:"neuron"`
	PublicKey neuron.PublicKey `json:"public_key"`
	Profile   string           `json:"profile"` // neuron.Profile
	Network   string           `json:"network"` // pinned at init
	Policy    neuron.Particle  `json:"policy"`
	Epoch     uint64           `json:"epoch,string"`
	// Generation is the placement generation: 0 means no worker was ever
	// bound; every bind or release adds one.
	Generation uint64                     `json:"generation,string"`
	Worker     *protocol.WorkerDescriptor `json:"worker"` // nil: no worker
	Updated    time.Time                  `json:"updated"`
	// Records says how the store's fencing records are authenticated:
	// RecordsAuthenticated for every root this build writes, "" for a
	// root written before schema 7 (its store's records carry no tags
	// until the first start with the neuron's key authenticates them).
	// Signed: a root cannot be made to say its records are unauthenticated.
	Records   string `json:"records,omitempty"`
	Signature Hex    `json:"signature"`
}

// RecordsAuthenticated is Root.Records of a store whose every fencing
// record carries its authentication tag (docs/fencing.md, "Authenticated
// records").
const RecordsAuthenticated = "hmac-sha256/1"

// Grant is the ward's state: what the neuron currently permits. Replacing
// it is a CAS on Revision.
type Grant struct {
	Neuron   neuron.ID       `json:"neuron"`
	Network  string          `json:"network"`
	Policy   neuron.Particle `json:"policy"`
	Epoch    uint64          `json:"epoch,string"`
	Revision uint64          `json:"revision,string"`
	Enabled  bool            `json:"enabled"`
	Acts     U64s            `json:"acts"` // sorted act tags
	// Progs limits the grant to these progs (sorted ids); nil means every
	// prog, an empty list none.
	Progs     []string  `json:"progs"`
	Created   time.Time `json:"created"`
	Signature Hex       `json:"signature"`
}

// ProgState is a prog's lifecycle state.
type ProgState string

const (
	ProgInstalled ProgState = "installed"
	ProgActive    ProgState = "active"
	ProgPaused    ProgState = "paused"
	ProgRetiring  ProgState = "retiring"
	ProgRetired   ProgState = "retired"
)

// progMoves is the prog lifecycle: installed → active | retiring; active
// ↔ paused; active, paused → retiring → retired.
var progMoves = map[ProgState][]ProgState{
	ProgInstalled: {ProgActive, ProgRetiring},
	ProgActive:    {ProgPaused, ProgRetiring},
	ProgPaused:    {ProgActive, ProgRetiring},
	ProgRetiring:  {ProgRetired},
}

// Valid reports whether s is a prog state.
func (s ProgState) Valid() bool {
	switch s {
	case ProgInstalled, ProgActive, ProgPaused, ProgRetiring, ProgRetired:
		return true
	}
	return false
}

// CanMove reports whether the lifecycle allows from → to.
func (s ProgState) CanMove(to ProgState) bool {
	for _, t := range progMoves[s] {
		if t == to {
			return true
		}
	}
	return false
}

// Prog is an installed nox program in the host-act environment.
//
// Revision is 0 at install and one more at each upgrade; Program,
// Particle, Acts, StepLimit and MaxInFlight are the current revision's
// (the ones before are kept in prog_revisions). The id is derived from
// the first revision's program and never changes.
type Prog struct {
	ID          string    `json:"id"` // ProgID(neuron, particle of revision 0)
	Neuron      neuron.ID `json:"neuron"`
	Revision    uint64    `json:"revision,string"`
	Environment string    `json:"environment"` // protocol.EnvHostAct
	// Program is the formula's canonical token encoding; Particle its
	// identity (the noun's Hemera particle).
	Program  []byte          `json:"program"`
	Particle neuron.Particle `json:"particle"`
	Name     string          `json:"name,omitempty"` // where it was installed from: informational
	State    ProgState       `json:"state"`
	// StepLimit bounds each invocation's VM steps (and its nox budget).
	StepLimit   uint64    `json:"step_limit,string"`
	MaxInFlight uint64    `json:"max_inflight,string"` // live invocations at once
	Acts        U64s      `json:"acts"`                // requested act tags: a request, never a grant
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
}

// InvocationStatus is an invocation's persisted status.
type InvocationStatus string

const (
	InvocationRunning   InvocationStatus = "running" // runnable: no proposal waits
	InvocationWaiting   InvocationStatus = "waiting" // an operation is proposed or attempted
	InvocationCompleted InvocationStatus = "completed"
	InvocationFailed    InvocationStatus = "failed"
	InvocationCancelled InvocationStatus = "cancelled"
	// InvocationConflict: its program did not replay to its recorded
	// operations, or it ran at a prog revision that a newer one replaced
	// (its result, if it reached one, is kept but stale).
	InvocationConflict InvocationStatus = "conflict"
)

// Valid reports whether s is a status.
func (s InvocationStatus) Valid() bool {
	switch s {
	case InvocationRunning, InvocationWaiting, InvocationCompleted, InvocationFailed, InvocationCancelled, InvocationConflict:
		return true
	}
	return false
}

// Terminal reports whether s never changes again.
func (s InvocationStatus) Terminal() bool {
	switch s {
	case InvocationCompleted, InvocationFailed, InvocationCancelled, InvocationConflict:
		return true
	}
	return false
}

// Invocation is one run of a prog on public inputs. Its step accounting
// (Charged, Delegated, Held), its operation sequence (Ordinal, Pending)
// and its running/waiting status belong to the store's reservation,
// delegation and operation transitions; PutInvocation changes only its
// epoch and its end.
type Invocation struct {
	ID           string           `json:"id"` // InvocationID(neuron, prog, seq)
	Seq          uint64           `json:"seq,string"`
	Neuron       neuron.ID        `json:"neuron"`
	Network      string           `json:"network"`
	Prog         string           `json:"prog"`
	ProgRevision uint64           `json:"prog_revision,string"`
	Inputs       U64s             `json:"inputs"`
	Epoch        uint64           `json:"epoch,string"`
	Status       InvocationStatus `json:"status"`
	// Parent is the invocation whose allowance this one runs on ("" for
	// a top-level invocation).
	Parent string `json:"parent,omitempty"`
	// Limit is the prog's step limit when invoked (a child's: the
	// allowance its parent delegated); Charged the steps charged so far;
	// Delegated the steps given to children; Held the open reservation
	// (0: none). Charged + Delegated + Held never exceeds Limit, and
	// nothing is ever refunded.
	Limit     uint64 `json:"limit,string"`
	Charged   uint64 `json:"charged,string"`
	Delegated uint64 `json:"delegated,string,omitempty"`
	Held      uint64 `json:"held,string"`
	// Ordinal is how many operations were proposed; Pending is the last
	// one while it is not consumed.
	Ordinal uint64 `json:"ordinal,string"`
	Pending string `json:"pending,omitempty"`
	// Result is the program's result noun (canonical tokens), Output its
	// atoms; set when completed.
	Result  []byte          `json:"result,omitempty"`
	Output  U64s            `json:"output,omitempty"`
	Error   *protocol.Error `json:"error,omitempty"`
	Created time.Time       `json:"created"`
	Updated time.Time       `json:"updated"`
}

// Stage of an operation (contract.md §4.3).
type Stage uint8

const (
	StageProposed  Stage = 0 // awaiting an attempt
	StageAttempted Stage = 1 // an attempt is recorded: unknown until its outcome
	StageOutcome   Stage = 2 // the outcome is recorded
	StageConsumed  Stage = 3 // the program took the outcome (or the proposal was dropped)
)

var stageNames = [...]string{"proposed", "attempted", "outcome", "consumed"}

func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return "stage(" + strconv.Itoa(int(s)) + ")"
}

// Operation is a suspended act: the program reached call with Tag on
// Argument (the object at the call, canonical tokens).
type Operation struct {
	ID         string          `json:"id"` // OperationID(neuron, prog, invocation, ordinal)
	Neuron     neuron.ID       `json:"neuron"`
	Network    string          `json:"network"`
	Prog       string          `json:"prog"`
	Invocation string          `json:"invocation"`
	Ordinal    uint64          `json:"ordinal,string"`
	Tag        uint64          `json:"tag,string"`
	Argument   []byte          `json:"argument"`
	Policy     neuron.Particle `json:"policy"`
	Epoch      uint64          `json:"epoch,string"`
	Stage      Stage           `json:"stage"`
	Attempt    uint32          `json:"attempt,omitempty"` // the recorded attempt (0: none)
	Created    time.Time       `json:"created"`
	Updated    time.Time       `json:"updated"`
}

// Executor kinds of an attempt.
const (
	// ExecutorWorker: the attempt was prepared for the bound worker,
	// whose descriptor it carries.
	ExecutorWorker = "neuron/worker/1"
	// ExecutorManual: a manual take for an external executor: generation
	// 0, no descriptor, no token; only reconciliation resolves it.
	ExecutorManual = "manual-reconciliation/1"
	// ExecutorRestored: an operation of an invocation that a restored
	// store fenced (RestoreFence): it may have run after the backup, so
	// it is recorded attempted, generation 0, no descriptor, no token,
	// and only reconciliation resolves it.
	ExecutorRestored = "restored-backup/1"
)

// ActAttempt is the immutable record of one attempt of an operation,
// written before any physical call. Its Authorization is the neuron's
// signature over it.
type ActAttempt struct {
	Operation  string                     `json:"operation"`
	N          uint32                     `json:"n"`
	Neuron     neuron.ID                  `json:"neuron"`
	Network    string                     `json:"network"`
	Prog       string                     `json:"prog"`
	Invocation string                     `json:"invocation"`
	Tag        uint64                     `json:"tag,string"`
	OpDigest   Hex                        `json:"operation_digest"` // OperationDigest of the operation
	Executor   string                     `json:"executor"`         // ExecutorWorker, ExecutorManual or ExecutorRestored
	Worker     *protocol.WorkerDescriptor `json:"worker"`
	Generation uint64                     `json:"generation,string"`
	Policy     neuron.Particle            `json:"policy"`
	Epoch      uint64                     `json:"epoch,string"`
	Created    time.Time                  `json:"created"`
	// Authorization is the neuron's signature over the attempt.
	Authorization Hex `json:"authorization"`
}

// Claim is the one-use dispatch claim of an attempt: after it, the act
// may have started. Signed.
type Claim struct {
	Operation  string                    `json:"operation"`
	Attempt    uint32                    `json:"attempt"`
	Generation uint64                    `json:"generation,string"`
	Worker     protocol.WorkerDescriptor `json:"worker"`
	Created    time.Time                 `json:"created"`
	Signature  Hex                       `json:"signature"`
}

// OutcomeKind says whether an act gave a value or failed.
type OutcomeKind string

const (
	OutcomeValue  OutcomeKind = "value"
	OutcomeFailed OutcomeKind = "failed"
)

// Outcome is the definite result of one attempt, recorded once.
type Outcome struct {
	Operation string      `json:"operation"`
	Attempt   uint32      `json:"attempt"`
	Kind      OutcomeKind `json:"kind"`
	Value     []byte      `json:"value,omitempty"` // canonical tokens of the value noun
	Message   string      `json:"message,omitempty"`
	// Source is who reported it: "act" (the executor) or "reconcile"
	// (the owner). It does not take part in the idempotency comparison.
	Source   string    `json:"source"`
	Recorded time.Time `json:"recorded"`
}

// Same reports whether two outcomes say the same thing.
func (o *Outcome) Same(p *Outcome) bool {
	return o.Operation == p.Operation && o.Attempt == p.Attempt && o.Kind == p.Kind &&
		string(o.Value) == string(p.Value) && o.Message == p.Message
}

// Reservation is an open VM step reservation of an invocation.
type Reservation struct {
	Invocation string    `json:"invocation"`
	Steps      uint64    `json:"steps,string"`
	Base       uint64    `json:"base,string"` // the invocation's charged steps when it opened
	Boot       string    `json:"boot"`
	Created    time.Time `json:"created"`
}

// JobClaim is the claim of a job attempt: made before its worker is
// given the job, for the placement generation it was prepared in. Signed
// when the home has a neuron.
type JobClaim struct {
	Job        string                    `json:"job"`
	Attempt    uint32                    `json:"attempt"`
	Generation uint64                    `json:"generation,string"`
	Worker     protocol.WorkerDescriptor `json:"worker"`
	Created    time.Time                 `json:"created"`
	Signature  Hex                       `json:"signature,omitempty"`
}

// Hex is bytes written as lowercase hex (internal/jsonenc, shared with
// the API's types).
type Hex = jsonenc.Hex

// U64s is a list of u64 written as decimal strings.
type U64s = jsonenc.U64s
