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

// MaxOutputAtoms bounds the atoms kept as an invocation's output.
const MaxOutputAtoms = 4096

// Drive runs an invocation as far as it goes by itself: slices of its
// program, and the acts they reach through prepare and dispatch with
// this engine's worker. It returns the invocation when it has ended, or
// with the refusal that stops it: an unknown attempt (reconcile it), an
// older epoch (rebind it), a paused prog, a placement or grant that does
// not permit the next step. A crash leaves at most an open reservation,
// which the next Drive charges in full before anything else.
func (e *Engine) Drive(ctx context.Context, invID string) (*store.Invocation, error) {
	return e.drive(ctx, invID, true)
}

// Advance runs an invocation's slices until it waits on an operation
// (proposed or attempted) or ends. It never prepares or dispatches: the
// operation is left for Prepare, Take or a Drive.
func (e *Engine) Advance(ctx context.Context, invID string) (*store.Invocation, error) {
	return e.drive(ctx, invID, false)
}

func (e *Engine) drive(ctx context.Context, invID string, dispatch bool) (*store.Invocation, error) {
	unlock := e.lockInvocation(invID)
	defer unlock()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		inv, op, err := e.state(ctx, invID)
		if err != nil {
			return nil, err
		}
		switch {
		case inv.Status.Terminal():
			return inv, nil
		case inv.Held != 0:
			if _, err := e.recoverReservation(ctx, invID); err != nil {
				return inv, err
			}
		case op != nil && op.Stage == store.StageAttempted:
			if !dispatch {
				return inv, nil
			}
			return inv, unknown(op.ID, op.Attempt, "drive")
		case op != nil && op.Stage == store.StageProposed:
			if !dispatch {
				return inv, nil
			}
			tok, err := e.Prepare(ctx, invID)
			if err != nil {
				return inv, err
			}
			res, err := e.Dispatch(ctx, tok)
			if err != nil {
				return inv, err
			}
			if res.Outcome == nil {
				return inv, unknown(res.Operation, res.Attempt, "drive: "+res.Unknown)
			}
		default:
			if err := e.slice(ctx, invID); err != nil {
				return inv, err
			}
		}
	}
}

// state reads an invocation and its pending operation.
func (e *Engine) state(ctx context.Context, invID string) (*store.Invocation, *store.Operation, error) {
	var inv *store.Invocation
	var op *store.Operation
	err := e.view(ctx, func(tx store.Tx) (err error) {
		op = nil
		if inv, err = tx.Invocation(invID); err != nil {
			return storeError(err)
		}
		if inv.Pending != "" {
			op, err = tx.Operation(inv.Pending)
		}
		return storeError(err)
	})
	return inv, op, err
}

// slicePlan is what a slice runs: read, and its reservation made, in one
// transaction.
type slicePlan struct {
	inv      *store.Invocation // as it was before the reservation
	program  noun.Noun
	log      []logEntry
	reserved uint64
	pending  string // the pending operation whose outcome the log ends with
}

// slice reserves steps durably, runs the program once from the start
// with replay, and records what the run reached together with the charge.
func (e *Engine) slice(ctx context.Context, invID string) error {
	var plan *slicePlan
	err := e.write(ctx, func(tx store.Tx) (err error) {
		plan, err = e.reserve(tx, invID)
		return err
	})
	if errors.Is(err, errNoSteps) {
		return e.endInvocation(ctx, invID, store.InvocationFailed, nil,
			protocol.Errorf(protocol.CodeBudgetExhausted, "the invocation used its step limit"))
	}
	if err != nil {
		return err
	}
	run := e.run(ctx, plan)
	return e.write(context.WithoutCancel(ctx), func(tx store.Tx) error { return e.settle(tx, plan, run) })
}

var errNoSteps = refuse(Budget, "the invocation used its step limit")

// reserve checks that the invocation may run now and reserves
// min(available, ReservationSteps) steps.
func (e *Engine) reserve(tx store.Tx, invID string) (*slicePlan, error) {
	inv, err := tx.Invocation(invID)
	if err != nil {
		return nil, storeError(err)
	}
	root, err := tx.Root()
	if err != nil {
		return nil, storeError(err)
	}
	switch {
	case inv.Status.Terminal():
		return nil, refuse(Lifecycle, "run: invocation %s ended %s", inv.ID, inv.Status)
	case inv.Held != 0:
		return nil, refuse(Busy, "run: invocation %s has an open reservation", inv.ID)
	case inv.Epoch != root.Epoch:
		return nil, refuse(Denied, "run: invocation %s is at epoch %d, the neuron at %d (rebind it)", inv.ID, inv.Epoch, root.Epoch)
	}
	p, err := tx.Prog(inv.Prog)
	if err != nil {
		return nil, storeError(err)
	}
	if p.State != store.ProgActive {
		return nil, refuse(Lifecycle, "run: prog %s is %s", p.ID, p.State)
	}
	if _, _, err := authority(tx, management("run", p.ID)); err != nil {
		return nil, err
	}
	program, err := store.DecodeNoun(p.Program)
	if err != nil {
		return nil, refuse(Conflict, "run: prog %s does not decode: %v", p.ID, err)
	}
	plan := &slicePlan{inv: inv, program: program}
	for ord := uint64(0); ord < inv.Ordinal; ord++ {
		op, err := tx.Operation(store.OperationID(inv.Neuron, inv.Prog, inv.ID, ord))
		if err != nil {
			return nil, storeError(err)
		}
		last := ord+1 == inv.Ordinal
		switch {
		case op.Stage == store.StageConsumed:
		case last && op.ID == inv.Pending && op.Stage == store.StageOutcome:
			plan.pending = op.ID
		default:
			return nil, refuse(Conflict, "run: operation %s (ordinal %d) is %s", op.ID, ord, op.Stage)
		}
		a, err := tx.ActAttempt(op.ID, op.Attempt)
		if err != nil {
			return nil, storeError(err)
		}
		if !bytes.Equal(a.OpDigest, store.OperationDigest(op)) {
			return nil, refuse(Conflict, "run: operation %s is not the one its attempt authorized", op.ID)
		}
		o, err := tx.Outcome(op.ID, op.Attempt)
		if err != nil {
			return nil, storeError(err)
		}
		ent := logEntry{op: op, outcome: o}
		if o.Kind == store.OutcomeValue {
			if ent.value, err = store.DecodeNoun(o.Value); err != nil {
				return nil, refuse(Conflict, "run: the outcome of %s does not decode: %v", op.ID, err)
			}
		}
		plan.log = append(plan.log, ent)
	}
	available := inv.Limit - inv.Charged
	if available == 0 {
		return nil, errNoSteps
	}
	plan.reserved = min(available, e.cfg.ReservationSteps)
	r := &store.Reservation{Invocation: inv.ID, Steps: plan.reserved, Base: inv.Charged, Boot: e.cfg.Boot, Created: e.now()}
	if err := tx.Reserve(r); err != nil {
		return nil, storeError(err)
	}
	return plan, nil
}

// runResult is what one run of a slice reached.
type runResult struct {
	err     error // errSuspend, errOutOfSteps, errDiverged, errArgument, a provider or cancel error, or nil
	outcome reduce.Outcome
	steps   uint64
	suspend *suspension
	served  int
	failed  int
	diverge string
}

func (e *Engine) run(ctx context.Context, plan *slicePlan) runResult {
	allowed := plan.inv.Charged + plan.reserved
	p := &replay{log: plan.log, allowed: allowed, failed: -1}
	m := reduce.New(reduce.Config{Provider: p, MaxCells: e.cfg.MaxCells, MaxSteps: allowed})
	p.m = m
	subject := noun.Subject(plan.inv.Inputs)
	out, err := m.Reduce(ctx, subject, plan.program, plan.inv.Limit)
	res := runResult{err: err, outcome: out, steps: m.Stats().Steps, suspend: p.suspend, served: p.served, failed: p.failed, diverge: p.diverged}
	if errors.Is(err, reduce.ErrStepLimit) || (err == nil && res.steps > allowed) {
		res.err = errOutOfSteps
	}
	return res
}

// settle charges what the run used and records what it reached, in one
// transaction: the next operation, the end, or nothing (the run used its
// reservation and the next slice goes on).
func (e *Engine) settle(tx store.Tx, plan *slicePlan, run runResult) error {
	base, reserved := plan.inv.Charged, plan.reserved
	used := uint64(0)
	if run.steps > base {
		used = run.steps - base
	}
	if errors.Is(run.err, errOutOfSteps) || used > reserved {
		used = reserved
	}
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
	switch {
	case errors.Is(run.err, errSuspend):
		root, err := tx.Root()
		if err != nil {
			return storeError(err)
		}
		s := run.suspend
		op := &store.Operation{ID: store.OperationID(inv.Neuron, inv.Prog, inv.ID, inv.Ordinal), Neuron: inv.Neuron,
			Network: inv.Network, Prog: inv.Prog, Invocation: inv.ID, Ordinal: inv.Ordinal, Tag: s.tag, Argument: s.argument,
			Policy: root.Policy, Epoch: root.Epoch, Created: e.now()}
		op.Updated = op.Created
		return storeError(tx.CreateOperation(op))
	case errors.Is(run.err, errOutOfSteps):
		if inv.Charged == inv.Limit {
			return fail(protocol.CodeBudgetExhausted, "the invocation used its step limit of %d", inv.Limit)
		}
		return nil // the next slice goes on
	case errors.Is(run.err, errDiverged):
		inv.Status, inv.Updated = store.InvocationConflict, e.now()
		if inv.Pending != "" {
			if err := tx.ConsumeOperation(inv.Pending); err != nil {
				return storeError(err)
			}
			if inv, err = tx.Invocation(plan.inv.ID); err != nil {
				return storeError(err)
			}
			inv.Status, inv.Updated = store.InvocationConflict, e.now()
		}
		inv.Error = protocol.Errorf(protocol.CodeStaleState, "the program did not replay to recorded operation %s", run.diverge)
		return storeError(tx.PutInvocation(inv))
	case errors.Is(run.err, errArgument):
		return fail(protocol.CodeArtifactTooLarge, "an act's argument exceeds %d bytes", protocol.MaxArgumentBytesLimit)
	case errors.Is(run.err, reduce.ErrCellLimit):
		return fail(protocol.CodeMemoryExhausted, "the program built more than %d pairs", e.cfg.MaxCells)
	case errors.Is(run.err, reduce.ErrCancelled):
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
		inv.Status, inv.Updated = store.InvocationConflict, e.now()
		if inv.Pending != "" {
			if err := tx.ConsumeOperation(inv.Pending); err != nil {
				return storeError(err)
			}
			if inv, err = tx.Invocation(plan.inv.ID); err != nil {
				return storeError(err)
			}
			inv.Status, inv.Updated = store.InvocationConflict, e.now()
		}
		inv.Error = protocol.Errorf(protocol.CodeStaleState, "the program ended before recorded operation %s", plan.log[run.served].op.ID)
		return storeError(tx.PutInvocation(inv))
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
	return e.write(ctx, func(tx store.Tx) error {
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
