package fencing

import (
	"bytes"
	"context"
	"errors"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// prepared is what prepare checked and what the attempt will record.
type prepared struct {
	inv     *store.Invocation
	op      *store.Operation
	root    *store.Root
	attempt *store.ActAttempt
}

// checkPending finds an invocation's pending operation and checks that
// it can be attempted now: the invocation is live and at the current
// epoch, its prog is active, the operation is proposed (stage 1 is an
// unknown outcome) and its tag is one the prog requested and the grant
// gives.
func checkPending(tx store.FencingTx, invID, name string) (*prepared, error) {
	inv, err := tx.Invocation(invID)
	if err != nil {
		return nil, storeError(err)
	}
	root, err := tx.Root()
	if err != nil {
		return nil, storeError(err)
	}
	if inv.Status.Terminal() {
		return nil, refuse(Lifecycle, "%s: invocation %s ended %s", name, inv.ID, inv.Status)
	}
	if inv.Epoch != root.Epoch {
		return nil, refuse(Denied, "%s: invocation %s is at epoch %d, the neuron at %d (rebind it)", name, inv.ID, inv.Epoch, root.Epoch)
	}
	p, err := tx.Prog(inv.Prog)
	if err != nil {
		return nil, storeError(err)
	}
	if p.State != store.ProgActive {
		return nil, refuse(Lifecycle, "%s: prog %s is %s", name, p.ID, p.State)
	}
	if inv.ProgRevision != p.Revision {
		return nil, stale(name, inv, p)
	}
	if inv.Pending == "" {
		return nil, refuse(Missing, "%s: invocation %s has no pending operation", name, inv.ID)
	}
	op, err := tx.Operation(inv.Pending)
	if err != nil {
		return nil, storeError(err)
	}
	switch op.Stage {
	case store.StageProposed:
	case store.StageAttempted:
		return nil, unknown(op.ID, op.Attempt, name)
	default:
		return nil, refuse(Conflict, "%s: operation %s is at stage %s", name, op.ID, op.Stage)
	}
	if !slices.Contains(p.Acts, op.Tag) {
		return nil, refuse(Denied, "%s: prog %s did not request act %s", name, p.ID, hostact.FormatTag(op.Tag))
	}
	if _, _, err := authority(tx, action{name: name, prog: p.ID, act: op.Tag, hasAct: true}); err != nil {
		return nil, err
	}
	return &prepared{inv: inv, op: op, root: root}, nil
}

// Prepare records the attempt of an invocation's pending operation for
// this engine's worker and returns the only token that may dispatch it.
// Beyond checkPending it needs the exact current placement (this boot's
// worker at the root's generation: fenced otherwise) and an argument
// within the descriptor's bound and an act in its act set (denied
// otherwise). The attempt and its signed authorization are durable
// before the token exists. Preparing again answers unknown outcome.
func (e *Engine) Prepare(ctx context.Context, invID string) (DispatchToken, error) {
	for try := 0; ; try++ {
		var pre *prepared
		err := e.view(ctx, func(tx store.FencingTx) (err error) {
			pre, err = e.checkPrepare(tx, invID)
			return err
		})
		if err != nil {
			return DispatchToken{}, err
		}
		a := pre.attempt
		if a.Authorization, err = e.sign(a.Statement()); err != nil {
			return DispatchToken{}, err
		}
		if err := e.trust.Preverify(a); err != nil {
			return DispatchToken{}, storeError(err)
		}
		crashpoint("before-attempt")
		err = e.write(ctx, func(tx store.FencingTx) error {
			again, err := e.checkPrepare(tx, invID)
			if err != nil {
				return err
			}
			if again.op.ID != a.Operation || !bytes.Equal(again.attempt.OpDigest, a.OpDigest) ||
				again.attempt.Generation != a.Generation || again.root.Epoch != a.Epoch || again.root.Policy != a.Policy {
				return errChanged
			}
			return storeError(tx.RecordAttempt(a))
		})
		if errors.Is(err, errChanged) && try < 3 {
			continue
		}
		if err != nil {
			return DispatchToken{}, err
		}
		e.log.Debug("attempt prepared", "operation", a.Operation, "attempt", a.N, "generation", a.Generation)
		return e.token(a, pre.op), nil
	}
}

// token is the one token of a just-recorded attempt.
func (e *Engine) token(a *store.ActAttempt, op *store.Operation) DispatchToken {
	return DispatchToken{p: &permit{engine: e, meta: Dispatch{
		Neuron: a.Neuron, Network: a.Network, Prog: a.Prog, Invocation: a.Invocation, Operation: a.Operation,
		Attempt: a.N, Policy: a.Policy, Epoch: a.Epoch, Tag: a.Tag, Arguments: slices.Clone(op.Argument),
		Authorization: slices.Clone(a.Authorization), Executor: *a.Worker, Generation: a.Generation,
	}}}
}

// errChanged: the state moved between the check and the write.
var errChanged = refuse(Conflict, "the operation changed while it was being prepared")

func (e *Engine) checkPrepare(tx store.FencingTx, invID string) (*prepared, error) {
	pre, err := checkPending(tx, invID, "prepare")
	if err != nil {
		return nil, err
	}
	root, op := pre.root, pre.op
	if fenced, err := fencedInvocation(tx, pre.inv); err != nil || fenced {
		if err != nil {
			return nil, err
		}
		return nil, errRestored(pre.inv, op)
	}
	mine := e.Descriptor(root.Network)
	if root.Generation == 0 || root.Worker == nil || !root.Worker.Equal(mine) {
		return nil, refuse(Fenced, "prepare: the placement (generation %d) is not this boot's worker", root.Generation)
	}
	d := root.Worker
	if d.Network != root.Network || d.Network != op.Network {
		return nil, refuse(Denied, "prepare: the worker is for network %q, the operation for %q", d.Network, op.Network)
	}
	if !slices.Contains(d.Acts, op.Tag) {
		return nil, refuse(Denied, "prepare: the worker has no act %s", hostact.FormatTag(op.Tag))
	}
	if uint64(len(op.Argument)) > d.MaxArgumentBytes {
		return nil, refuse(Denied, "prepare: the argument is %d bytes, the worker takes at most %d", len(op.Argument), d.MaxArgumentBytes)
	}
	w := *d
	pre.attempt = &store.ActAttempt{Operation: op.ID, N: 1, Neuron: op.Neuron, Network: op.Network, Prog: op.Prog,
		Invocation: op.Invocation, Tag: op.Tag, OpDigest: store.OperationDigest(op), Executor: store.ExecutorWorker,
		Worker: &w, Generation: root.Generation, Policy: root.Policy, Epoch: root.Epoch, Created: e.now()}
	return pre, nil
}

// Take records a manual attempt of an invocation's pending operation, for
// an executor outside this supervisor: generation 0, executor
// manual-reconciliation/1, no token. The embedded worker never dispatches
// it; only reconciliation resolves it. This is not automatic fencing: it
// records that somebody is about to act by hand. A second take answers
// unknown outcome.
func (e *Engine) Take(ctx context.Context, invID string) (*store.ActAttempt, error) {
	unlock := e.lockInvocation(invID)
	defer unlock()
	var pre *prepared
	err := e.view(ctx, func(tx store.FencingTx) (err error) { pre, err = checkPending(tx, invID, "take"); return err })
	if err != nil {
		return nil, err
	}
	op, root := pre.op, pre.root
	a := &store.ActAttempt{Operation: op.ID, N: 1, Neuron: op.Neuron, Network: op.Network, Prog: op.Prog,
		Invocation: op.Invocation, Tag: op.Tag, OpDigest: store.OperationDigest(op), Executor: store.ExecutorManual,
		Policy: root.Policy, Epoch: root.Epoch, Created: e.now()}
	if a.Authorization, err = e.sign(a.Statement()); err != nil {
		return nil, err
	}
	if err := e.trust.Preverify(a); err != nil {
		return nil, storeError(err)
	}
	err = e.write(ctx, func(tx store.FencingTx) error {
		again, err := checkPending(tx, invID, "take")
		if err != nil {
			return err
		}
		if again.op.ID != op.ID || again.root.Epoch != a.Epoch || again.root.Policy != a.Policy {
			return errChanged
		}
		return storeError(tx.RecordAttempt(a))
	})
	if err != nil {
		return nil, err
	}
	e.log.Info("manual take recorded", "operation", a.Operation, "attempt", a.N)
	return a, nil
}

// protocolInvalid is a bad input at the engine's edge.
func protocolInvalid(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeInvalidJob, format, args...)
}
