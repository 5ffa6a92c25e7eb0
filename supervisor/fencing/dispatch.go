package fencing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Result is how a dispatch ended: with a recorded outcome, or unknown
// (the act panicked, said unknown, or its outcome could not be
// recorded). An unknown attempt needs reconciliation.
type Result struct {
	Operation string
	Attempt   uint32
	// Outcome is the recorded outcome; nil when unknown.
	Outcome *store.Outcome
	// Unknown says why the outcome is unknown.
	Unknown string
}

// Dispatch consumes a token and runs its attempt: it rechecks the
// current neuron, network, policy, epoch and placement, the invocation,
// prog and operation, the attempt and its authorization and the stored
// arguments against the token; then, holding the ward guard for
// reading, it commits the attempt's one-use claim and calls the act
// synchronously with the stored arguments (never the token's metadata).
// That pair is the linearization point: a revocation or replacement
// ordered before it refuses the dispatch and the act is never called; one
// ordered after it cannot undo the started effect. The guard is released
// before the outcome is recorded.
func (e *Engine) Dispatch(ctx context.Context, t DispatchToken) (*Result, error) {
	meta, ok := t.consume(e)
	if !ok {
		if t.p == nil || t.p.engine != e {
			return nil, refuse(Fenced, "dispatch: the token was not made by this engine")
		}
		m := t.p.meta
		return nil, unknown(m.Operation, m.Attempt, "dispatch: the token was already consumed")
	}
	return e.dispatch(ctx, meta)
}

// dispatch runs a consumed token's attempt.
func (e *Engine) dispatch(ctx context.Context, meta Dispatch) (*Result, error) {
	res, _, err := e.dispatchNext(ctx, meta, false)
	return res, err
}

// dispatchNext runs a consumed token's attempt. With next (a Drive), the
// transaction that records the outcome also reserves the invocation's
// next slice, which is returned.
//
// A consumed token is dispatched even when ctx has ended (a shutdown):
// its attempt is durable, and stopping before the claim would leave it
// unknown although the act never ran. The act's own context ends
// ActGrace after ctx does.
func (e *Engine) dispatchNext(ctx context.Context, meta Dispatch, next bool) (*Result, *store.Reservation, error) {
	root, err := e.Root(context.WithoutCancel(ctx))
	if err != nil {
		return nil, nil, err
	}
	mine := e.Descriptor(root.Network)
	if !meta.Executor.Equal(mine) || meta.Network != root.Network {
		return nil, nil, refuse(Fenced, "dispatch: the token is for another worker")
	}
	if meta.Generation == 0 {
		return nil, nil, refuse(Fenced, "dispatch: generation 0 is never dispatched")
	}
	claim := &store.Claim{Operation: meta.Operation, Attempt: meta.Attempt, Generation: meta.Generation,
		Worker: meta.Executor, Created: e.now()}
	// Signed before the guard: taking the read lock again inside it
	// (signing may consult the vault) would deadlock against a waiting
	// writer.
	if claim.Signature, err = e.sign(claim.Statement()); err != nil {
		return nil, nil, err
	}
	if err := e.trust.Preverify(claim); err != nil {
		return nil, nil, storeError(err)
	}
	crashpoint("before-claim")
	res, err := e.claimAndCall(ctx, meta, claim)
	if err != nil {
		e.log.Info("dispatch refused", "operation", meta.Operation, "attempt", meta.Attempt, "err", err)
		return nil, nil, err
	}
	crashpoint("before-outcome")
	reserveFor := ""
	if next {
		reserveFor = meta.Invocation
	}
	out, own := e.recordResult(ctx, meta.Operation, meta.Attempt, res, "act", reserveFor)
	if out.Outcome != nil {
		crashpoint("before-consume")
	}
	return out, own, nil
}

// claimAndCall is the guarded section: the final check and the claim in
// one transaction, then the act, all under the guard's read lock (which
// a deferred unlock releases whatever the act does).
func (e *Engine) claimAndCall(ctx context.Context, meta Dispatch, claim *store.Claim) (hostact.Result, error) {
	e.guard.RLock()
	defer e.guard.RUnlock()
	var call hostact.Call
	var act hostact.Act
	err := e.write(context.WithoutCancel(ctx), func(tx store.FencingTx) error {
		c, a, err := e.checkDispatch(tx, meta)
		if err != nil {
			return err
		}
		call, act = c, a
		return storeError(tx.RecordClaim(claim))
	})
	if err != nil {
		return hostact.Result{}, err
	}
	crashpoint("before-act")
	return e.callAct(ctx, act, call), nil
}

// checkDispatch is the final check, inside the claim's transaction and
// under the guard. It returns the call to make, built from the stored
// operation.
func (e *Engine) checkDispatch(tx store.FencingTx, m Dispatch) (hostact.Call, hostact.Act, error) {
	var none hostact.Call
	root, err := tx.Root()
	if err != nil {
		return none, hostact.Act{}, storeError(err)
	}
	switch {
	case root.Network != m.Network:
		return none, hostact.Act{}, refuse(Fenced, "dispatch: the neuron's network changed")
	case root.Generation != m.Generation || root.Worker == nil || !root.Worker.Equal(m.Executor):
		return none, hostact.Act{}, refuse(Fenced, "dispatch: the placement is at generation %d, the token was made for %d", root.Generation, m.Generation)
	case root.Policy != m.Policy || root.Epoch != m.Epoch:
		return none, hostact.Act{}, refuse(Denied, "dispatch: the neuron is at policy %s epoch %d, the token was made for epoch %d", root.Policy, root.Epoch, m.Epoch)
	}
	op, err := tx.Operation(m.Operation)
	if err != nil {
		return none, hostact.Act{}, storeError(err)
	}
	inv, err := tx.Invocation(op.Invocation)
	if err != nil {
		return none, hostact.Act{}, storeError(err)
	}
	p, err := tx.Prog(op.Prog)
	if err != nil {
		return none, hostact.Act{}, storeError(err)
	}
	switch {
	case inv.ID != m.Invocation || p.ID != m.Prog || op.Neuron != m.Neuron:
		return none, hostact.Act{}, refuse(Conflict, "dispatch: the token names another invocation, prog or neuron than the operation")
	case inv.Status.Terminal():
		return none, hostact.Act{}, refuse(Lifecycle, "dispatch: invocation %s ended %s", inv.ID, inv.Status)
	case inv.Epoch != root.Epoch:
		return none, hostact.Act{}, refuse(Denied, "dispatch: invocation %s is at epoch %d, the neuron at %d", inv.ID, inv.Epoch, root.Epoch)
	case p.State != store.ProgActive:
		return none, hostact.Act{}, refuse(Lifecycle, "dispatch: prog %s is %s", p.ID, p.State)
	case inv.ProgRevision != p.Revision:
		// An upgrade takes the guard for writing: it is ordered before
		// this claim (refused here) or after the act call.
		return none, hostact.Act{}, stale("dispatch", inv, p)
	case op.Stage != store.StageAttempted:
		return none, hostact.Act{}, refuse(Conflict, "dispatch: operation %s is at stage %s", op.ID, op.Stage)
	case op.Attempt != m.Attempt || op.Tag != m.Tag:
		return none, hostact.Act{}, refuse(Conflict, "dispatch: the token's attempt or tag is not the operation's")
	case !bytes.Equal(op.Argument, m.Arguments):
		return none, hostact.Act{}, refuse(Conflict, "dispatch: the token's arguments are not the stored ones")
	case uint64(len(op.Argument)) > root.Worker.MaxArgumentBytes || !slices.Contains(root.Worker.Acts, op.Tag):
		return none, hostact.Act{}, refuse(Denied, "dispatch: the worker does not take this act or argument")
	}
	a, err := tx.ActAttempt(op.ID, m.Attempt)
	if err != nil {
		return none, hostact.Act{}, storeError(err)
	}
	if a.Executor != store.ExecutorWorker || a.Generation != m.Generation || a.Worker == nil ||
		!a.Worker.Equal(m.Executor) || !bytes.Equal(a.Authorization, m.Authorization) {
		return none, hostact.Act{}, refuse(Conflict, "dispatch: the attempt record is not the token's")
	}
	// The operation is not signed itself; its signed attempt binds it.
	if !bytes.Equal(a.OpDigest, store.OperationDigest(op)) {
		return none, hostact.Act{}, refuse(Conflict, "dispatch: operation %s is not the one its attempt authorized", op.ID)
	}
	if _, err := tx.Claim(op.ID, m.Attempt); err == nil {
		return none, hostact.Act{}, unknown(op.ID, m.Attempt, "dispatch: the attempt is already claimed")
	} else if !errors.Is(err, store.ErrNotFound) {
		return none, hostact.Act{}, storeError(err)
	}
	// The final ward check, under the guard.
	if _, _, err := authority(tx, action{name: "dispatch", prog: p.ID, act: op.Tag, hasAct: true}); err != nil {
		return none, hostact.Act{}, err
	}
	act, ok := e.acts.Lookup(op.Tag)
	if !ok {
		return none, hostact.Act{}, refuse(Unsupported, "dispatch: no act is registered under tag %s", hostact.FormatTag(op.Tag))
	}
	arg, err := store.DecodeNoun(op.Argument)
	if err != nil {
		return none, hostact.Act{}, refuse(Conflict, "dispatch: the stored argument does not decode: %v", err)
	}
	return hostact.Call{Neuron: op.Neuron.String(), Prog: op.Prog, Invocation: op.Invocation, Operation: op.ID,
		Attempt: m.Attempt, Generation: m.Generation, Tag: op.Tag, Argument: arg}, act, nil
}

// callAct runs the act; a panic is an unknown outcome (the effect may
// have started), logged without the argument. The act's context ends
// ActGrace after the caller's does (actContext).
func (e *Engine) callAct(ctx context.Context, act hostact.Act, c hostact.Call) (res hostact.Result) {
	ctx, release := e.actContext(ctx)
	defer release()
	defer func() {
		if r := recover(); r != nil {
			e.log.Warn("act panicked: its attempt is unknown", "act", act.Name, "operation", c.Operation, "attempt", c.Attempt,
				"panic", fmt.Sprint(r))
			e.log.Debug("act panic stack", "stack", string(debug.Stack()))
			res = hostact.Unknown("the act panicked")
		}
	}()
	return act.Func(ctx, c)
}

// recordResult records a definite result as the attempt's outcome. With
// an invocation to reserve for, the same transaction reserves its next
// slice when it may run (returned).
func (e *Engine) recordResult(ctx context.Context, op string, n uint32, r hostact.Result, source, reserveFor string) (*Result, *store.Reservation) {
	out := &Result{Operation: op, Attempt: n}
	if r.IsUnknown() {
		out.Unknown = r.Message()
		e.log.Warn("act outcome unknown: reconcile the attempt", "operation", op, "attempt", n)
		return out, nil
	}
	o := &store.Outcome{Operation: op, Attempt: n, Kind: store.OutcomeValue, Source: source, Recorded: e.now()}
	if r.IsFailed() {
		o.Kind, o.Message = store.OutcomeFailed, r.Message()
	} else {
		o.Value = noun.AppendTokens(nil, r.Value())
	}
	// The outcome is recorded even if the caller went away: the effect
	// happened.
	var own *store.Reservation
	err := e.write(context.WithoutCancel(ctx), func(tx store.FencingTx) error {
		own = nil
		if _, err := tx.RecordOutcome(o); err != nil {
			return storeError(err)
		}
		if reserveFor == "" {
			return nil
		}
		var err error
		own, err = e.reserveNext(tx, reserveFor)
		return storeError(err)
	})
	if err != nil {
		out.Unknown = "the outcome could not be recorded: " + err.Error()
		e.log.Error("record outcome: the attempt stays unknown", "operation", op, "attempt", n, "err", err)
		return out, nil
	}
	out.Outcome = o
	return out, own
}

// actContext is the context an act runs with: it ends ActGrace after
// ctx ends, not at once. A claimed act is started already; a daemon's
// shutdown (or a CLI's signal) that ended it at once would make an act
// that honours its context give up, and its failure would end the
// invocation. The grace lets it finish and its outcome be recorded, and
// still bounds a shutdown by an act that does not return by itself.
func (e *Engine) actContext(ctx context.Context) (context.Context, func()) {
	actCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// A grace timer left when the act returns first only cancels a
	// context already cancelled.
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(e.cfg.ActGrace, cancel) })
	return actCtx, func() { stop(); cancel() }
}
