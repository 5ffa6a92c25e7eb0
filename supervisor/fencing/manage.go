package fencing

import (
	"context"
	"errors"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// OutcomeSpec is an owner's reconciliation: a value or a failure.
type OutcomeSpec struct {
	Value   noun.Noun
	Failed  bool
	Message string // for a failure
}

// MaxFailureMessage bounds a reconciled failure's message.
const MaxFailureMessage = 4096

// Reconcile records the outcome of an attempt (an unknown one, a manual
// take's, or one already recorded: the same outcome again is idempotent,
// recorded=false; another is a conflict). It needs a current grant for
// the neuron, network, policy and prog, but not the act: a new policy
// may reconcile what it no longer permits to run. It pins the original
// operation and attempt.
func (e *Engine) Reconcile(ctx context.Context, opID string, n uint32, spec OutcomeSpec) (*store.Outcome, bool, error) {
	o := &store.Outcome{Operation: opID, Attempt: n, Kind: store.OutcomeValue, Source: "reconcile", Recorded: e.now()}
	if spec.Failed {
		if len(spec.Message) > MaxFailureMessage {
			return nil, false, protocolInvalid("the failure message is longer than %d bytes", MaxFailureMessage)
		}
		o.Kind, o.Message = store.OutcomeFailed, spec.Message
	} else {
		if _, err := noun.Measure(spec.Value, store.MaxNounNodes, store.MaxNounDepth); err != nil {
			return nil, false, protocolInvalid("the value is too large")
		}
		o.Value = noun.AppendTokens(nil, spec.Value)
	}
	recorded := false
	err := e.write(ctx, func(tx store.Tx) error {
		recorded = false
		op, err := tx.Operation(opID)
		if err != nil {
			return storeError(err)
		}
		if _, _, err := authority(tx, management("reconcile", op.Prog)); err != nil {
			return err
		}
		if _, err := tx.ActAttempt(opID, n); err != nil {
			return storeError(err)
		}
		recorded, err = tx.RecordOutcome(o)
		return storeError(err)
	})
	if err != nil {
		return nil, false, err
	}
	if recorded {
		e.log.Info("attempt reconciled", "operation", opID, "attempt", n, "kind", o.Kind)
	}
	return o, recorded, nil
}

// Archive moves an ended top-level invocation and its children (all of
// them ended) out of the live set. Their operations, attempts, claims
// and outcomes stay as evidence. Management.
func (e *Engine) Archive(ctx context.Context, invID string) error {
	err := e.write(ctx, func(tx store.Tx) error {
		inv, err := tx.Invocation(invID)
		if err != nil {
			return storeError(err)
		}
		if _, _, err := authority(tx, management("archive", inv.Prog)); err != nil {
			return err
		}
		if inv.Parent != "" {
			return refuse(Lifecycle, "archive: invocation %s is a child of %s; archive its top-level invocation", inv.ID, inv.Parent)
		}
		for queue := []*store.Invocation{inv}; len(queue) > 0; queue = queue[1:] {
			m := queue[0]
			if !m.Status.Terminal() {
				if m == inv {
					return refuse(Lifecycle, "archive: invocation %s is %s; only ended invocations are archived", m.ID, m.Status)
				}
				return refuse(Lifecycle, "archive: invocation %s of its tree is %s; a tree is archived once all of it ended", m.ID, m.Status)
			}
			kids, err := tx.Children(m.ID)
			if err != nil {
				return storeError(err)
			}
			for _, id := range kids {
				c, err := tx.Invocation(id)
				if err != nil {
					return storeError(err)
				}
				queue = append(queue, c)
			}
		}
		return storeError(tx.ArchiveInvocation(invID))
	})
	if err == nil {
		e.log.Info("invocation archived", "invocation", invID)
	}
	return err
}

// Rebind moves a live invocation admitted under an older epoch to the
// current one, so that it may run and dispatch again. It is busy while
// an operation of it is proposed or attempted (stage 0 or 1) or a
// reservation is open, so it never changes an unknown attempt; and it
// needs the prog's act set under the current grant.
func (e *Engine) Rebind(ctx context.Context, invID string) (*store.Invocation, error) {
	unlock := e.lockInvocation(invID)
	defer unlock()
	var out *store.Invocation
	err := e.write(ctx, func(tx store.Tx) error {
		out = nil
		inv, err := tx.Invocation(invID)
		if err != nil {
			return storeError(err)
		}
		if inv.Status.Terminal() {
			return refuse(Lifecycle, "rebind: invocation %s ended %s", inv.ID, inv.Status)
		}
		if inv.Pending != "" {
			op, err := tx.Operation(inv.Pending)
			if err != nil {
				return storeError(err)
			}
			if op.Stage == store.StageProposed || op.Stage == store.StageAttempted {
				return refuse(Busy, "rebind: operation %s of invocation %s is %s", op.ID, inv.ID, op.Stage)
			}
		}
		if inv.Held != 0 {
			return refuse(Busy, "rebind: invocation %s has an open reservation (recover it first)", inv.ID)
		}
		p, err := tx.Prog(inv.Prog)
		if err != nil {
			return storeError(err)
		}
		root, _, err := authority(tx, withActs("rebind", p))
		if err != nil {
			return err
		}
		if inv.Epoch == root.Epoch {
			out = inv
			return nil
		}
		inv.Epoch, inv.Updated = root.Epoch, e.now()
		out = inv
		return storeError(tx.PutInvocation(inv))
	})
	if err != nil {
		return nil, err
	}
	e.log.Info("invocation rebound", "invocation", invID, "epoch", out.Epoch)
	return out, nil
}

// RecoverReservation charges an open reservation in full: a crash left
// it, and the steps it held may have run. Nothing else runs for the
// invocation before this. Management. No open reservation: nothing to
// do (false).
func (e *Engine) RecoverReservation(ctx context.Context, invID string) (bool, error) {
	unlock := e.lockInvocation(invID)
	defer unlock()
	return e.recoverReservation(ctx, invID)
}

func (e *Engine) recoverReservation(ctx context.Context, invID string) (bool, error) {
	recovered := false
	err := e.write(ctx, func(tx store.Tx) error {
		recovered = false
		inv, err := tx.Invocation(invID)
		if err != nil {
			return storeError(err)
		}
		if _, _, err := authority(tx, management("recover-reservation", inv.Prog)); err != nil {
			return err
		}
		r, err := tx.Reservation(invID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return storeError(err)
		}
		recovered = true
		return storeError(tx.Charge(invID, r.Steps))
	})
	if recovered {
		e.log.Info("reservation recovered: charged in full", "invocation", invID)
	}
	return recovered, err
}
