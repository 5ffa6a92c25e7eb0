package fenceservice

import (
	"context"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
)

// Invocations and their operations: invoke, wait, the management moves,
// a manual take and reconciliation.

// ValidID says whether id is a record id: 64 lowercase hex digits.
func ValidID(id string) bool {
	return len(id) == 64 && strings.Trim(id, "0123456789abcdef") == ""
}

func (s *Service) Invocations(ctx context.Context) ([]*apitypes.Invocation, error) {
	invs, err := s.e.Invocations(ctx)
	if err != nil {
		return nil, err
	}
	return InvocationsOf(invs), nil
}

// InvokeWith makes an invocation (a child when body.Parent names one)
// and starts it (Scheduler.Start).
func (s *Service) InvokeWith(ctx context.Context, body InvokeBody) (*apitypes.Invocation, error) {
	if body.Parent != "" && !ValidID(body.Parent) {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "parent id %s: want 64 lowercase hex digits", protocol.QuotePrefix(body.Parent))
	}
	inv, err := s.e.InvokeWith(ctx, fencing.InvokeSpec{Prog: body.Prog, Inputs: body.Inputs, Parent: body.Parent, Allowance: body.Steps})
	if err != nil {
		return nil, err
	}
	return invocationOrErr(s.sched.Start(ctx, inv))
}

func (s *Service) Invocation(ctx context.Context, id string) (*InvocationReply, error) {
	return invocationReplyOf(s.e.Invocation(ctx, id))
}

// WaitInvocation returns the invocation once it ended or cannot go on
// by itself, or when ctx ended.
func (s *Service) WaitInvocation(ctx context.Context, id string) (*InvocationReply, error) {
	return invocationReplyOf(s.sched.WaitInvocation(ctx, id))
}

// CancelInvocation ends a live invocation and the live ones below it.
func (s *Service) CancelInvocation(ctx context.Context, id string) (*apitypes.Invocation, error) {
	return invocationOrErr(s.e.Cancel(ctx, id, ""))
}

// ArchiveInvocation removes an ended invocation from the list.
func (s *Service) ArchiveInvocation(ctx context.Context, id string) (*InvocationReply, error) {
	if err := s.e.Archive(ctx, id); err != nil {
		return nil, err
	}
	return invocationReplyOf(s.e.Invocation(ctx, id))
}

// RebindInvocation moves an invocation to the current epoch: it may go
// on.
func (s *Service) RebindInvocation(ctx context.Context, id string) (*apitypes.Invocation, error) {
	inv, err := s.e.Rebind(ctx, id)
	if err != nil {
		return nil, err
	}
	s.sched.RunInvocation(id)
	return InvocationOf(inv), nil
}

// Take records a manual attempt of the invocation's pending operation.
func (s *Service) Take(ctx context.Context, invocation string) (*apitypes.ActAttempt, error) {
	a, err := s.e.Take(ctx, invocation)
	if err != nil {
		return nil, err
	}
	return ActAttemptOf(a), nil
}

// Operations lists the operations of one invocation ("": of all).
func (s *Service) Operations(ctx context.Context, invocation string) ([]OperationReply, error) {
	if invocation != "" && !ValidID(invocation) {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "invocation id %s: want 64 lowercase hex digits", protocol.QuotePrefix(invocation))
	}
	ops, err := s.e.Operations(ctx, invocation)
	if err != nil {
		return nil, err
	}
	return OperationRepliesOf(ops), nil
}

func (s *Service) Operation(ctx context.Context, id string) (*OperationReply, error) {
	v, err := s.e.Operation(ctx, id)
	if err != nil {
		return nil, err
	}
	out := OperationReplyOf(*v)
	return &out, nil
}

// OutcomeSpecOf reads a reconciliation: a value in nox text (canonical
// literals) or a failure message, exactly one.
func OutcomeSpecOf(value, failed *string) (fencing.OutcomeSpec, error) {
	switch {
	case (value == nil) == (failed == nil):
		return fencing.OutcomeSpec{}, protocol.Errorf(protocol.CodeInvalidJob, "give exactly one of a value and a failure")
	case failed != nil:
		if !protocol.ValidText(*failed) {
			return fencing.OutcomeSpec{}, protocol.Errorf(protocol.CodeInvalidJob, "the failure message: want 1-%d printable ASCII characters", protocol.MaxTextBytes)
		}
		return fencing.OutcomeSpec{Failed: true, Message: *failed}, nil
	}
	n, err := noun.ParseWith(*value, noun.ParseOptions{Literals: noun.CanonicalLiterals, MaxNodes: 1 << 16})
	if err != nil {
		return fencing.OutcomeSpec{}, protocol.Errorf(protocol.CodeInvalidJob, "the value: %s", protocol.SafeMessage(err.Error()))
	}
	return fencing.OutcomeSpec{Value: n}, nil
}

// Reconcile records the outcome of an operation's attempt, once; its
// invocation may then go on.
func (s *Service) Reconcile(ctx context.Context, op string, body ReconcileBody) (*ReconcileReply, error) {
	if body.Attempt == 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "attempt: want the attempt's number (1 or more)")
	}
	spec, err := OutcomeSpecOf(body.Value, body.Failed)
	if err != nil {
		return nil, err
	}
	o, recorded, err := s.e.Reconcile(ctx, op, body.Attempt, spec)
	if err != nil {
		return nil, err
	}
	if v, err := s.e.Operation(ctx, op); err == nil {
		s.sched.RunInvocation(v.Invocation)
	}
	return &ReconcileReply{Outcome: OutcomeOf(o), Recorded: recorded}, nil
}
