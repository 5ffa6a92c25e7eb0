package fencing

import (
	"context"
	"errors"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// AttemptView is an attempt with its claim and outcome. Unknown means it
// has no outcome: it may have run, and only reconciliation resolves it.
type AttemptView struct {
	*store.ActAttempt
	Claim   *store.Claim   `json:"claim"`
	Outcome *store.Outcome `json:"outcome"`
	Unknown bool           `json:"unknown"`
}

// OperationView is an operation with its attempts.
type OperationView struct {
	*store.Operation
	StageName string        `json:"stage_name"`
	Attempts  []AttemptView `json:"attempts"`
}

// InvocationView is an invocation with its operations and reservation.
type InvocationView struct {
	*store.Invocation
	Archived    bool               `json:"archived"`
	Reservation *store.Reservation `json:"reservation"`
	Operations  []OperationView    `json:"operations"`
	Children    []string           `json:"children"`
	// Idle is set by a daemon's wait: no drive of the invocation was
	// queued or running while it was read, so an unknown attempt in it
	// (claimed or not) waits for its owner's reconcile, not for a
	// dispatch in flight.
	Idle bool `json:"idle,omitempty"`
}

func operationView(tx store.FencingTx, op *store.Operation) (OperationView, error) {
	v := OperationView{Operation: op, StageName: op.Stage.String(), Attempts: []AttemptView{}}
	atts, err := tx.ActAttempts(op.ID)
	if err != nil {
		return v, storeError(err)
	}
	for _, a := range atts {
		av := AttemptView{ActAttempt: a}
		if c, err := tx.Claim(op.ID, a.N); err == nil {
			av.Claim = c
		} else if !errors.Is(err, store.ErrNotFound) {
			return v, storeError(err)
		}
		if o, err := tx.Outcome(op.ID, a.N); err == nil {
			av.Outcome = o
		} else if !errors.Is(err, store.ErrNotFound) {
			return v, storeError(err)
		}
		av.Unknown = av.Outcome == nil
		v.Attempts = append(v.Attempts, av)
	}
	return v, nil
}

// Invocation reads an invocation (live or archived) with its operations.
func (e *Engine) Invocation(ctx context.Context, id string) (*InvocationView, error) {
	var out *InvocationView
	err := e.view(ctx, func(tx store.FencingTx) error {
		inv, err := tx.Invocation(id)
		archived := false
		if errors.Is(err, store.ErrNotFound) {
			inv, err = tx.ArchivedInvocation(id)
			archived = true
		}
		if err != nil {
			return storeError(err)
		}
		v := &InvocationView{Invocation: inv, Archived: archived, Operations: []OperationView{}}
		if r, err := tx.Reservation(id); err == nil {
			v.Reservation = r
		} else if !errors.Is(err, store.ErrNotFound) {
			return storeError(err)
		}
		if v.Children, err = tx.Children(id); err != nil {
			return storeError(err)
		}
		if v.Children == nil {
			v.Children = []string{}
		}
		ops, err := tx.Operations(id)
		if err != nil {
			return storeError(err)
		}
		for _, op := range ops {
			ov, err := operationView(tx, op)
			if err != nil {
				return err
			}
			v.Operations = append(v.Operations, ov)
		}
		out = v
		return nil
	})
	return out, err
}

// Invocations lists the live (not archived) invocations.
func (e *Engine) Invocations(ctx context.Context) ([]*store.Invocation, error) {
	var out []*store.Invocation
	err := e.view(ctx, func(tx store.FencingTx) error {
		out = nil
		return tx.ForEachInvocation(func(inv *store.Invocation) bool { out = append(out, inv); return true })
	})
	return out, storeError(err)
}

// Operations lists operations with their attempts: an invocation's (its
// id given), or every one.
func (e *Engine) Operations(ctx context.Context, inv string) ([]OperationView, error) {
	var out []OperationView
	err := e.view(ctx, func(tx store.FencingTx) error {
		out = []OperationView{}
		var ops []*store.Operation
		if inv != "" {
			if _, err := tx.Invocation(inv); err != nil {
				if _, aerr := tx.ArchivedInvocation(inv); aerr != nil {
					return storeError(err)
				}
			}
			var err error
			if ops, err = tx.Operations(inv); err != nil {
				return storeError(err)
			}
		} else if err := tx.ForEachOperation(func(op *store.Operation) bool { ops = append(ops, op); return true }); err != nil {
			return storeError(err)
		}
		for _, op := range ops {
			v, err := operationView(tx, op)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return nil
	})
	return out, err
}

// Operation reads one operation with its attempts.
func (e *Engine) Operation(ctx context.Context, id string) (*OperationView, error) {
	var out *OperationView
	err := e.view(ctx, func(tx store.FencingTx) error {
		op, err := tx.Operation(id)
		if err != nil {
			return storeError(err)
		}
		v, err := operationView(tx, op)
		out = &v
		return err
	})
	return out, err
}
