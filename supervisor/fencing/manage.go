package fencing

import (
	"context"
	"errors"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
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
	err := e.write(ctx, func(tx store.FencingTx) error {
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
	err := e.write(ctx, func(tx store.FencingTx) error {
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
	err := e.write(ctx, func(tx store.FencingTx) error {
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

// RecoverReservation closes an open reservation a crash left: it is
// charged what its slice could have used (replayCharge), or all of it
// when that slice cannot be replayed or a replay of it crashed too.
// Nothing else runs for the invocation before this. Management. No open
// reservation: nothing to do (false).
func (e *Engine) RecoverReservation(ctx context.Context, invID string) (bool, error) {
	unlock := e.lockInvocation(invID)
	defer unlock()
	// The replay's run waits, evictable, for the next drive.
	defer e.driveEnded(invID, false)
	return e.recoverReservation(ctx, invID)
}

// replayMark ends the boot id of a reservation held while a recovery
// replays the slice a crash left: if the replay crashes as well (a
// program that brings the supervisor down), the next recovery finds the
// mark and charges in full instead of replaying again, so no program
// makes a crash loop.
const replayMark = "/replay"

func (e *Engine) recoverReservation(ctx context.Context, invID string) (bool, error) {
	var r *store.Reservation
	err := e.view(ctx, func(tx store.FencingTx) (err error) {
		if r, err = tx.Reservation(invID); errors.Is(err, store.ErrNotFound) {
			r, err = nil, nil
		}
		return storeError(err)
	})
	if err != nil || r == nil {
		return false, err
	}
	steps := r.Steps
	var live *liveRun
	if !strings.HasSuffix(r.Boot, replayMark) {
		if r, err = e.markReplay(ctx, invID, r); err != nil {
			return false, err
		}
		if r != nil {
			if steps, live, err = e.replayCharge(ctx, invID, r); err != nil {
				return false, err
			}
		}
	}
	recovered, replayed := false, false
	err = e.write(ctx, func(tx store.FencingTx) error {
		recovered, replayed = false, false
		cur, err := e.recoverable(tx, invID)
		if err != nil || cur == nil {
			return err
		}
		charge := steps
		replayed = r != nil && sameReservation(cur, r) && charge <= cur.Steps
		if !replayed {
			charge = cur.Steps // not the one replayed: in full
		}
		recovered, steps = true, charge
		return storeError(tx.Charge(invID, charge))
	})
	if recovered {
		e.log.Info("reservation recovered", "invocation", invID, "charged", steps)
	}
	if live != nil {
		if err == nil && recovered && replayed {
			// The replay's run goes on from where it stopped: the next
			// slice reports that stop (it was not recorded), or, out of
			// the reservation's steps, resumes it.
			live.at, live.reached = r.Base+steps, live.stop.kind == stopSteps
		} else {
			e.drop(live, false)
		}
	}
	return recovered, err
}

// recoverable is the invocation's open reservation, once the grant
// permits recovering it (nil: none is open).
func (e *Engine) recoverable(tx store.FencingTx, invID string) (*store.Reservation, error) {
	inv, err := tx.Invocation(invID)
	if err != nil {
		return nil, storeError(err)
	}
	if _, _, err := authority(tx, management("recover-reservation", inv.Prog)); err != nil {
		return nil, err
	}
	cur, err := tx.Reservation(invID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return cur, storeError(err)
}

func sameReservation(a, b *store.Reservation) bool {
	return a.Boot == b.Boot && a.Created.Equal(b.Created) && a.Base == b.Base && a.Steps == b.Steps
}

// markReplay replaces the crashed reservation r by the same steps under
// this boot's replay mark, in one transaction (nothing is charged in
// between): the reservation the replay holds. nil: r is no longer the
// open one (whatever is open then is charged in full).
func (e *Engine) markReplay(ctx context.Context, invID string, r *store.Reservation) (*store.Reservation, error) {
	mark := &store.Reservation{Invocation: invID, Steps: r.Steps, Base: r.Base, Boot: e.cfg.Boot + replayMark, Created: e.now()}
	err := e.write(ctx, func(tx store.FencingTx) error {
		cur, err := e.recoverable(tx, invID)
		if err != nil {
			return err
		}
		if cur == nil || !sameReservation(cur, r) {
			return errChanged
		}
		if err := tx.Charge(invID, 0); err != nil {
			return storeError(err)
		}
		return storeError(tx.Reserve(mark))
	})
	if errors.Is(err, errChanged) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return mark, nil
}

// replayCharge is what the crashed slice of a reservation could have
// used, replayed on mark (the same steps): the program is deterministic,
// and the slice ran from the state the reservation was made in (nothing
// of the invocation moves while one is open), so a run from that state
// reaches the same act or end in the same steps, and the crashed one
// stopped there at the latest. All of it when the slice cannot be
// replayed (the program does not decode, the run hit the cell bound,
// which another configuration may have set higher). Replayed steps cost
// no new charge (docs/fencing.md, "Steps"), so this is what the next
// slice reaches anyway: a crash costs the invocation nothing of its
// budget, only the supervisor a run.
//
// The replay's run is returned to be kept (nil: it did not run): the
// next slice goes on with it rather than replaying once more.
func (e *Engine) replayCharge(ctx context.Context, invID string, mark *store.Reservation) (uint64, *liveRun, error) {
	var plan *slicePlan
	err := e.view(ctx, func(tx store.FencingTx) error {
		plan = nil
		inv, err := tx.Invocation(invID)
		if err != nil {
			return storeError(err)
		}
		if inv.Status.Terminal() || inv.Held != mark.Steps || inv.Charged != mark.Base {
			return nil
		}
		root, err := tx.Root()
		if err != nil {
			return storeError(err)
		}
		p, err := tx.Prog(inv.Prog)
		if err != nil {
			return storeError(err)
		}
		if plan, err = e.readPlan(tx, inv, root, p, mark, nil); err != nil {
			plan = nil
		}
		return nil
	})
	if err != nil || plan == nil {
		return mark.Steps, nil, err
	}
	run := e.run(ctx, plan)
	switch {
	case errors.Is(run.err, reduce.ErrCancelled):
		if run.live != nil {
			e.drop(run.live, false)
		}
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		return mark.Steps, nil, nil
	case errors.Is(run.err, reduce.ErrCellLimit), errors.Is(run.err, errOutOfSteps):
		return mark.Steps, run.live, nil
	}
	used := uint64(0)
	if run.steps > mark.Base {
		used = run.steps - mark.Base
	}
	return min(used, mark.Steps), run.live, nil
}
