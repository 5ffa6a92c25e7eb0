package fencing

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// settle charges what the run used and records what it reached, in one
// transaction: the next operation, the end, or nothing (the run used its
// reservation and the next slice goes on).
func (e *Engine) settle(tx store.FencingTx, plan *slicePlan, run runResult, pro *proposal) (DispatchToken, error) {
	var tok DispatchToken
	plan.goesOn = false
	err := e.settleRun(tx, plan, run, pro, &tok)
	return tok, err
}

func (e *Engine) settleRun(tx store.FencingTx, plan *slicePlan, run runResult, pro *proposal, tok *DispatchToken) error {
	base, reserved := plan.inv.Charged, plan.reserved
	used := uint64(0)
	if run.steps > base {
		used = run.steps - base
	}
	if errors.Is(run.err, errOutOfSteps) || used > reserved {
		used = reserved
	}
	*tok = DispatchToken{}
	if err := tx.Charge(plan.inv.ID, used); err != nil {
		return storeError(err)
	}
	// The pending outcome is taken once the replay has served it.
	if plan.pending != "" && run.served == len(plan.log) {
		if err := tx.ConsumeOperation(plan.pending); err != nil {
			return storeError(err)
		}
	}
	inv, err := tx.Invocation(plan.inv.ID)
	if err != nil {
		return storeError(err)
	}
	fail := func(code protocol.Code, format string, args ...any) error {
		if inv.Pending != "" {
			// A run that stopped before it took the pending outcome
			// (diverged, too large) ends the invocation: the outcome is
			// consumed without another effect.
			if err := tx.ConsumeOperation(inv.Pending); err != nil {
				return storeError(err)
			}
			if inv, err = tx.Invocation(plan.inv.ID); err != nil {
				return storeError(err)
			}
		}
		inv.Status, inv.Error, inv.Updated = store.InvocationFailed, protocol.Errorf(code, format, args...), e.now()
		return storeError(tx.PutInvocation(inv))
	}
	if p := plan.staleBy; p != nil && (run.err == nil || errors.Is(run.err, errSuspend)) {
		// A stale invocation proposes no act; a result it reached is
		// kept, stale.
		var result []byte
		var output store.U64s
		if run.err == nil && run.outcome.Status == reduce.OK && run.served == len(plan.log) {
			if _, err := noun.Measure(run.outcome.Result, store.MaxNounNodes, store.MaxNounDepth); err == nil {
				result = noun.AppendTokens(nil, run.outcome.Result)
				if atoms, err := noun.AppendAtoms(nil, run.outcome.Result, MaxOutputAtoms); err == nil {
					output = store.U64s(atoms)
				}
			}
		}
		return e.conflicted(tx, inv, func(inv *store.Invocation) {
			inv.Result, inv.Output = result, output
			inv.Error = protocol.Errorf(protocol.CodeStaleState, "%s", stale("run", inv, p).(*Error).Message)
		})
	}
	switch {
	case errors.Is(run.err, errSuspend):
		plan.goesOn = true
		root, err := tx.Root()
		if err != nil {
			return storeError(err)
		}
		op := pro.op
		if inv.Ordinal != op.Ordinal || root.Policy != op.Policy || root.Epoch != op.Epoch {
			// The neuron moved since the run: propose under what is
			// current, and leave the attempt to Prepare.
			s := run.suspend
			op = &store.Operation{ID: store.OperationID(inv.Neuron, inv.Prog, inv.ID, inv.Ordinal), Neuron: inv.Neuron,
				Network: inv.Network, Prog: inv.Prog, Invocation: inv.ID, Ordinal: inv.Ordinal, Tag: s.tag, Argument: s.argument,
				Policy: root.Policy, Epoch: root.Epoch, Created: e.now()}
			op.Updated = op.Created
		}
		if err := tx.CreateOperation(op); err != nil {
			return storeError(err)
		}
		if pro.attempt == nil || op != pro.op {
			return nil
		}
		if pro.attempt.Executor == store.ExecutorRestored {
			// A fenced invocation's operation: unknown, never dispatched.
			return storeError(tx.RecordAttempt(pro.attempt))
		}
		// Prepare's checks, in the same transaction.
		again, err := e.checkPrepare(tx, inv.ID)
		if _, refused := AsRefusal(err); refused {
			return nil
		}
		if err != nil {
			return err
		}
		a := pro.attempt
		if !bytes.Equal(again.attempt.OpDigest, a.OpDigest) || again.attempt.Generation != a.Generation ||
			again.root.Epoch != a.Epoch || again.root.Policy != a.Policy {
			return nil
		}
		if err := tx.RecordAttempt(a); err != nil {
			return storeError(err)
		}
		*tok = e.token(a, op)
		return nil
	case errors.Is(run.err, errOutOfSteps):
		if free(inv) == 0 {
			return fail(protocol.CodeBudgetExhausted, "the invocation used its step limit of %d (%d delegated)", inv.Limit, inv.Delegated)
		}
		plan.goesOn = true
		return nil // the next slice goes on
	case errors.Is(run.err, errDiverged):
		return e.conflicted(tx, inv, func(inv *store.Invocation) {
			inv.Error = protocol.Errorf(protocol.CodeStaleState, "the program did not replay to recorded operation %s", run.diverge)
		})
	case errors.Is(run.err, errArgument):
		return fail(protocol.CodeArtifactTooLarge, "an act's argument exceeds %d bytes", protocol.MaxArgumentBytesLimit)
	case errors.Is(run.err, reduce.ErrCellLimit):
		return fail(protocol.CodeMemoryExhausted, "the program held more than %d pairs", e.cfg.MaxCells)
	case errors.Is(run.err, reduce.ErrCancelled):
		plan.goesOn = true
		return nil // charged; the next Drive goes on
	case run.err != nil:
		var pe *protocol.Error
		if errors.As(run.err, &pe) {
			return fail(pe.Code, "%s", pe.Message)
		}
		return fail(protocol.CodeInternalError, "the run stopped: %v", run.err)
	}
	if run.served < len(plan.log) && run.failed < 0 {
		// It ended before reaching a recorded act: not the program that
		// made the record.
		return e.conflicted(tx, inv, func(inv *store.Invocation) {
			inv.Error = protocol.Errorf(protocol.CodeStaleState, "the program ended before recorded operation %s", plan.log[run.served].op.ID)
		})
	}
	switch run.outcome.Status {
	case reduce.OK:
		result := run.outcome.Result
		if _, err := noun.Measure(result, store.MaxNounNodes, store.MaxNounDepth); err != nil {
			return fail(protocol.CodeArtifactTooLarge, "the result is too large to keep")
		}
		inv.Status, inv.Result, inv.Updated = store.InvocationCompleted, noun.AppendTokens(nil, result), e.now()
		if atoms, err := noun.AppendAtoms(nil, result, MaxOutputAtoms); err == nil {
			inv.Output = store.U64s(atoms)
		}
		return storeError(tx.PutInvocation(inv))
	case reduce.Halt:
		if run.failed >= 0 {
			ent := plan.log[run.failed]
			return fail(protocol.CodeExecutionFailed, "act %s of operation %s failed: %s", e.acts.Name(ent.op.Tag), ent.op.ID, ent.outcome.Message)
		}
		return fail(protocol.CodeBudgetExhausted, "the nox budget of %d ran out", inv.Limit)
	default:
		return fail(protocol.CodeExecutionFailed, "nox error %s", run.outcome.Kind)
	}
}

// endInvocation ends a live invocation with no pending work.
func (e *Engine) endInvocation(ctx context.Context, invID string, status store.InvocationStatus, result []byte, perr *protocol.Error) error {
	return e.write(ctx, func(tx store.FencingTx) error {
		inv, err := tx.Invocation(invID)
		if err != nil {
			return storeError(err)
		}
		if inv.Status.Terminal() {
			return nil
		}
		if inv.Pending != "" {
			if err := tx.ConsumeOperation(inv.Pending); err != nil {
				return storeError(err)
			}
			if inv, err = tx.Invocation(invID); err != nil {
				return storeError(err)
			}
		}
		inv.Status, inv.Result, inv.Error, inv.Updated = status, result, perr, e.now()
		if err := tx.PutInvocation(inv); err != nil {
			return fmt.Errorf("end invocation %s: %w", invID, storeError(err))
		}
		return nil
	})
}

// conflicted ends inv as a conflict, with what edit adds (its error
// above all). A pending operation is consumed first; that writes the
// invocation, which is then read again.
func (e *Engine) conflicted(tx store.FencingTx, inv *store.Invocation, edit func(*store.Invocation)) error {
	if inv.Pending != "" {
		if err := tx.ConsumeOperation(inv.Pending); err != nil {
			return storeError(err)
		}
		again, err := tx.Invocation(inv.ID)
		if err != nil {
			return storeError(err)
		}
		inv = again
	}
	inv.Status, inv.Updated = store.InvocationConflict, e.now()
	edit(inv)
	return storeError(tx.PutInvocation(inv))
}
