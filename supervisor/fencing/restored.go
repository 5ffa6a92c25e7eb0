package fencing

import (
	"context"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// A store restored from a backup has forgotten whatever happened after
// the backup: an invocation it holds may have proposed, dispatched and
// consumed any number of operations since. The start that finds such a
// store fences it (the supervisor's restore.go; docs/design/restore.md):
// Meta.Fence covers every invocation it holds, and from then on none of
// them acts by itself again. Each operation such an invocation proposes,
// the one pending at the backup and every later one, is recorded
// attempted by a restored attempt (store.ExecutorRestored: no worker, no
// token, never claimed), so that it is unknown until its owner
// reconciles it — with the line its act wrote after the backup, say, or
// as failed. The act itself never runs for it again.

// fencedInvocation reports whether a restore fenced inv.
func fencedInvocation(tx store.FencingTx, inv *store.Invocation) (bool, error) {
	fenced, err := tx.InvocationFenced(inv.Seq)
	return fenced, storeError(err)
}

// errRestored refuses to prepare a worker attempt for an operation of an
// invocation a restore fenced.
func errRestored(inv *store.Invocation, op *store.Operation) *Error {
	return refuse(Fenced, "prepare: invocation %s was fenced when its store was restored from a backup: operation %s may have run after the backup and is never dispatched (a drive records it unknown, for reconciliation)",
		inv.ID, op.ID)
}

// isFenced reports whether a restore fenced the invocation.
func (e *Engine) isFenced(ctx context.Context, inv *store.Invocation) (bool, error) {
	fenced := false
	err := e.view(ctx, func(tx store.FencingTx) (err error) { fenced, err = fencedInvocation(tx, inv); return err })
	return fenced, err
}

// restoredAttempt is the signed restored attempt of op.
func (e *Engine) restoredAttempt(op *store.Operation, root *store.Root) (*store.ActAttempt, error) {
	a := &store.ActAttempt{Operation: op.ID, N: 1, Neuron: op.Neuron, Network: op.Network, Prog: op.Prog,
		Invocation: op.Invocation, Tag: op.Tag, OpDigest: store.OperationDigest(op), Executor: store.ExecutorRestored,
		Policy: root.Policy, Epoch: root.Epoch, Created: e.now()}
	var err error
	if a.Authorization, err = e.sign(a.Statement()); err != nil {
		return nil, err
	}
	return a, nil
}

// recordRestored records the restored attempt of a fenced invocation's
// proposed operation, and answers unknown outcome for it (what every
// later drive answers until it is reconciled).
func (e *Engine) recordRestored(ctx context.Context, invID string) error {
	var pre *prepared
	err := e.view(ctx, func(tx store.FencingTx) (err error) { pre, err = checkRestored(tx, invID); return err })
	if err != nil {
		return err
	}
	a, err := e.restoredAttempt(pre.op, pre.root)
	if err != nil {
		return err
	}
	if err := e.trust.Preverify(a); err != nil {
		return storeError(err)
	}
	err = e.write(ctx, func(tx store.FencingTx) error {
		again, err := checkRestored(tx, invID)
		if err != nil {
			return err
		}
		if again.op.ID != a.Operation || again.root.Epoch != a.Epoch || again.root.Policy != a.Policy {
			return errChanged
		}
		return storeError(tx.RecordAttempt(a))
	})
	if err != nil {
		return err
	}
	e.log.Info("operation of a restored invocation recorded unknown", "invocation", invID, "operation", a.Operation)
	return unknown(a.Operation, a.N, "drive: invocation "+invID+" was fenced when its store was restored from a backup")
}

// checkRestored is what a restored attempt needs: the fenced invocation's
// pending operation, proposed, under the current policy and epoch. It
// needs no grant of the act: nothing will run.
func checkRestored(tx store.FencingTx, invID string) (*prepared, error) {
	inv, err := tx.Invocation(invID)
	if err != nil {
		return nil, storeError(err)
	}
	root, err := tx.Root()
	if err != nil {
		return nil, storeError(err)
	}
	if inv.Pending == "" {
		return nil, refuse(Missing, "fence: invocation %s has no pending operation", inv.ID)
	}
	op, err := tx.Operation(inv.Pending)
	if err != nil {
		return nil, storeError(err)
	}
	switch {
	case op.Stage == store.StageAttempted:
		return nil, unknown(op.ID, op.Attempt, "fence")
	case op.Stage != store.StageProposed:
		return nil, refuse(Conflict, "fence: operation %s is at stage %s", op.ID, op.Stage)
	case op.Epoch != root.Epoch || op.Policy != root.Policy:
		return nil, refuse(Denied, "fence: operation %s was proposed at epoch %d, the neuron is at %d", op.ID, op.Epoch, root.Epoch)
	}
	return &prepared{inv: inv, op: op, root: root}, nil
}

// FenceReport is what FenceRestored did.
type FenceReport struct {
	// Fenced counts the live invocations the fence covers; Unknown the
	// operations it recorded attempted (restored) because they waited,
	// proposed, at the backup.
	Fenced  int
	Unknown int
}

// FenceRestored records, in the caller's transaction (which has set
// Meta.Fence), a restored attempt for the proposed operation of every
// live invocation the fence covers. An operation proposed under an
// older epoch is left as it is: no attempt of it can ever be recorded,
// so it can never have run. A proposal to sign needs the neuron's key.
func (e *Engine) FenceRestored(tx store.LocalTx) (FenceReport, error) {
	var rep FenceReport
	var live []*store.Invocation
	m, err := tx.Meta()
	if err != nil {
		return rep, err
	}
	if err := tx.ForEachInvocation(func(inv *store.Invocation) bool {
		if !inv.Status.Terminal() && m.Fences(inv.Seq) {
			live = append(live, inv)
		}
		return true
	}); err != nil {
		return rep, err
	}
	rep.Fenced = len(live)
	for _, inv := range live {
		pre, err := checkRestored(tx, inv.ID)
		if err != nil {
			if _, ok := AsRefusal(err); ok {
				continue // nothing proposed, attempted already, an outcome waiting, or an older epoch
			}
			return rep, fmt.Errorf("fence invocation %s: %w", inv.ID, err)
		}
		if p, err := tx.Prog(inv.Prog); err != nil || p.Revision != inv.ProgRevision {
			continue // stale: its proposal is dropped without an effect
		}
		a, err := e.restoredAttempt(pre.op, pre.root)
		if err != nil {
			return rep, fmt.Errorf("fence invocation %s: %w", inv.ID, err)
		}
		if err := tx.RecordAttempt(a); err != nil {
			return rep, fmt.Errorf("fence invocation %s: %w", inv.ID, err)
		}
		rep.Unknown++
		e.log.Info("restore: operation waiting at the backup recorded unknown", "invocation", inv.ID, "operation", a.Operation)
	}
	return rep, nil
}
