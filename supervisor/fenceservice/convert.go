package fenceservice

import (
	"bytes"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The conversions from the store's fencing records and the engine's
// views to the API's types (apitypes, fencing.go), one function per
// type. They are written out field by field on purpose: a record's field
// renamed or added in storage reaches clients only through a line here
// (convert_test.go holds what each must give, and which store fields are
// left out). Slices are copied, nil kept nil: a grant's progs null
// (every prog) and [] (none) say different things.

// RootOf is the neuron's root, or nil.
func RootOf(r *store.Root) *apitypes.Root {
	if r == nil {
		return nil
	}
	return &apitypes.Root{
		Neuron: r.Neuron, PublicKey: r.PublicKey, Profile: r.Profile, Network: r.Network, Policy: r.Policy,
		Epoch: r.Epoch, Generation: r.Generation, Worker: workerOf(r.Worker), Updated: r.Updated,
		Records: r.Records, Signature: hexOf(r.Signature),
	}
}

// GrantOf is the grant, or nil.
func GrantOf(g *store.Grant) *apitypes.Grant {
	if g == nil {
		return nil
	}
	return &apitypes.Grant{
		Neuron: g.Neuron, Network: g.Network, Policy: g.Policy, Epoch: g.Epoch, Revision: g.Revision,
		Enabled: g.Enabled, Acts: u64sOf(g.Acts), Progs: slices.Clone(g.Progs), Created: g.Created,
		Signature: hexOf(g.Signature),
	}
}

// ProgOf is a prog at its revision, or nil.
func ProgOf(p *store.Prog) *apitypes.Prog {
	if p == nil {
		return nil
	}
	return &apitypes.Prog{
		ID: p.ID, Neuron: p.Neuron, Revision: p.Revision, Environment: p.Environment,
		Program: bytes.Clone(p.Program), Particle: p.Particle, Name: p.Name, State: string(p.State),
		StepLimit: p.StepLimit, MaxInFlight: p.MaxInFlight, Acts: u64sOf(p.Acts), Created: p.Created, Updated: p.Updated,
	}
}

// ProgsOf is a list of progs, [] for none.
func ProgsOf(ps []*store.Prog) []*apitypes.Prog {
	out := make([]*apitypes.Prog, 0, len(ps))
	for _, p := range ps {
		out = append(out, ProgOf(p))
	}
	return out
}

// InvocationOf is an invocation record, or nil.
func InvocationOf(inv *store.Invocation) *apitypes.Invocation {
	if inv == nil {
		return nil
	}
	v := invocationOf(inv)
	return &v
}

func invocationOf(inv *store.Invocation) apitypes.Invocation {
	return apitypes.Invocation{
		ID: inv.ID, Seq: inv.Seq, Neuron: inv.Neuron, Network: inv.Network, Prog: inv.Prog,
		ProgRevision: inv.ProgRevision, Inputs: u64sOf(inv.Inputs), Epoch: inv.Epoch, Status: string(inv.Status),
		Parent: inv.Parent, Limit: inv.Limit, Charged: inv.Charged, Delegated: inv.Delegated, Held: inv.Held,
		Ordinal: inv.Ordinal, Pending: inv.Pending, Result: bytes.Clone(inv.Result), Output: u64sOf(inv.Output),
		Error: inv.Error, Created: inv.Created, Updated: inv.Updated,
	}
}

// InvocationsOf is a list of invocations, [] for none.
func InvocationsOf(invs []*store.Invocation) []*apitypes.Invocation {
	out := make([]*apitypes.Invocation, 0, len(invs))
	for _, inv := range invs {
		out = append(out, InvocationOf(inv))
	}
	return out
}

// InvocationReplyOf is an invocation with its operations, or nil. Its
// lists are [] when empty, never null.
func InvocationReplyOf(v *fencing.InvocationView) *apitypes.InvocationReply {
	if v == nil || v.Invocation == nil {
		return nil
	}
	out := &apitypes.InvocationReply{
		Invocation: invocationOf(v.Invocation), Archived: v.Archived, Reservation: ReservationOf(v.Reservation),
		Operations: OperationRepliesOf(v.Operations), Children: slices.Clone(orEmpty(v.Children)), Idle: v.Idle,
	}
	return out
}

// OperationOf is an operation record, or nil.
func OperationOf(op *store.Operation) *apitypes.Operation {
	if op == nil {
		return nil
	}
	return &apitypes.Operation{
		ID: op.ID, Neuron: op.Neuron, Network: op.Network, Prog: op.Prog, Invocation: op.Invocation,
		Ordinal: op.Ordinal, Tag: op.Tag, Argument: bytes.Clone(op.Argument), Policy: op.Policy, Epoch: op.Epoch,
		Stage: uint8(op.Stage), Attempt: op.Attempt, Created: op.Created, Updated: op.Updated,
	}
}

// OperationReplyOf is an operation with its attempts ([] for none).
func OperationReplyOf(v fencing.OperationView) apitypes.OperationReply {
	out := apitypes.OperationReply{StageName: v.StageName, Attempts: make([]apitypes.OperationAttempt, 0, len(v.Attempts))}
	if op := OperationOf(v.Operation); op != nil {
		out.Operation = *op
	}
	for _, a := range v.Attempts {
		out.Attempts = append(out.Attempts, OperationAttemptOf(a))
	}
	return out
}

// OperationRepliesOf is a list of operations, [] for none.
func OperationRepliesOf(vs []fencing.OperationView) []apitypes.OperationReply {
	out := make([]apitypes.OperationReply, 0, len(vs))
	for _, v := range vs {
		out = append(out, OperationReplyOf(v))
	}
	return out
}

// ActAttemptOf is an attempt record, or nil.
func ActAttemptOf(a *store.ActAttempt) *apitypes.ActAttempt {
	if a == nil {
		return nil
	}
	return &apitypes.ActAttempt{
		Operation: a.Operation, N: a.N, Neuron: a.Neuron, Network: a.Network, Prog: a.Prog, Invocation: a.Invocation,
		Tag: a.Tag, OpDigest: hexOf(a.OpDigest), Executor: a.Executor, Worker: workerOf(a.Worker),
		Generation: a.Generation, Policy: a.Policy, Epoch: a.Epoch, Created: a.Created, Authorization: hexOf(a.Authorization),
	}
}

// OperationAttemptOf is an attempt with its claim and outcome.
func OperationAttemptOf(v fencing.AttemptView) apitypes.OperationAttempt {
	out := apitypes.OperationAttempt{Claim: ActClaimOf(v.Claim), Outcome: OutcomeOf(v.Outcome), Unknown: v.Unknown}
	if a := ActAttemptOf(v.ActAttempt); a != nil {
		out.ActAttempt = *a
	}
	return out
}

// ActClaimOf is an attempt's dispatch claim, or nil.
func ActClaimOf(c *store.Claim) *apitypes.ActClaim {
	if c == nil {
		return nil
	}
	return &apitypes.ActClaim{Operation: c.Operation, Attempt: c.Attempt, Generation: c.Generation,
		Worker: *workerOf(&c.Worker), Created: c.Created, Signature: hexOf(c.Signature)}
}

// OutcomeOf is an attempt's outcome, or nil.
func OutcomeOf(o *store.Outcome) *apitypes.Outcome {
	if o == nil {
		return nil
	}
	return &apitypes.Outcome{Operation: o.Operation, Attempt: o.Attempt, Kind: string(o.Kind), Value: bytes.Clone(o.Value),
		Message: o.Message, Source: o.Source, Recorded: o.Recorded}
}

// ReservationOf is an open step reservation, or nil.
func ReservationOf(r *store.Reservation) *apitypes.Reservation {
	if r == nil {
		return nil
	}
	return &apitypes.Reservation{Invocation: r.Invocation, Steps: r.Steps, Base: r.Base, Boot: r.Boot, Created: r.Created}
}

// workerOf copies a worker descriptor (its acts too), or nil.
func workerOf(w *protocol.WorkerDescriptor) *protocol.WorkerDescriptor {
	if w == nil {
		return nil
	}
	c := *w
	c.Acts = slices.Clone(w.Acts)
	return &c
}

func hexOf(h store.Hex) apitypes.Hex { return apitypes.Hex(bytes.Clone(h)) }

func u64sOf(u store.U64s) apitypes.U64s { return apitypes.U64s(slices.Clone(u)) }

// The engine's answers with their error, converted: nil on an error.

func rootOf(r *store.Root, err error) (*apitypes.Root, error) {
	if err != nil {
		return nil, err
	}
	return RootOf(r), nil
}

func grantOf(g *store.Grant, err error) (*apitypes.Grant, error) {
	if err != nil {
		return nil, err
	}
	return GrantOf(g), nil
}

func progOf(p *store.Prog, err error) (*apitypes.Prog, error) {
	if err != nil {
		return nil, err
	}
	return ProgOf(p), nil
}

func invocationOrErr(inv *store.Invocation, err error) (*apitypes.Invocation, error) {
	if err != nil {
		return nil, err
	}
	return InvocationOf(inv), nil
}

func invocationReplyOf(v *fencing.InvocationView, err error) (*apitypes.InvocationReply, error) {
	if err != nil {
		return nil, err
	}
	return InvocationReplyOf(v), nil
}
