package fencing

import (
	"bytes"
	"context"
	"errors"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
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
// which the next Drive recovers before anything else.
func (e *Engine) Drive(ctx context.Context, invID string) (*store.Invocation, error) {
	return e.drive(ctx, invID, true)
}

// Advance runs an invocation's slices until it waits on an operation
// (proposed or attempted) or ends. It never prepares or dispatches: the
// operation is left for Prepare, Take or a Drive.
func (e *Engine) Advance(ctx context.Context, invID string) (*store.Invocation, error) {
	return e.drive(ctx, invID, false)
}

func (e *Engine) drive(ctx context.Context, invID string, dispatch bool) (out *store.Invocation, err error) {
	unlock := e.lockInvocation(invID)
	defer unlock()
	// The run kept for the invocation waits, evictable, for the next
	// drive; or goes, with the invocation.
	defer func() { e.driveEnded(invID, err == nil && out != nil && out.Status.Terminal()) }()
	// own is the reservation this drive made for its next slice, in the
	// transaction that recorded the last outcome: that slice runs on it.
	// One this drive does not run is closed with nothing used (its steps
	// never ran), never left for a recovery to replay and charge.
	var own *store.Reservation
	defer func() {
		if own != nil {
			e.closeReservation(context.WithoutCancel(ctx), own)
		}
	}()
	var inv *store.Invocation
	var m memo
	// unrecovered: the last recovery this drive tried found nothing.
	unrecovered := false
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var tok DispatchToken
		if own == nil {
			cur, op, err := e.state(ctx, invID)
			if err != nil {
				return nil, err
			}
			inv = cur
			switch {
			case inv.Status.Terminal():
				return inv, nil
			case inv.Held != 0:
				recovered, err := e.recoverReservation(ctx, invID)
				if err != nil {
					return inv, err
				}
				if !recovered && unrecovered {
					// Steps held with no reservation to recover: a
					// record the store lost (deleted from the file).
					// Going round again would spin for ever.
					return inv, refuse(Conflict, "invocation %s holds %d steps and has no open reservation to recover: the store lost a record (store check names it)", invID, inv.Held)
				}
				unrecovered = !recovered
				continue
			case op != nil && op.Stage == store.StageAttempted:
				if !dispatch {
					return inv, nil
				}
				return inv, unknown(op.ID, op.Attempt, "drive")
			case op != nil && op.Stage == store.StageProposed:
				if !dispatch {
					return inv, nil
				}
				if ended, err := e.endIfStale(ctx, invID); err != nil || ended {
					if err != nil {
						return inv, err
					}
					continue
				}
				if fenced, err := e.isFenced(ctx, inv); err != nil || fenced {
					if err != nil {
						return inv, err
					}
					return inv, e.recordRestored(ctx, invID)
				}
				if tok, err = e.Prepare(ctx, invID); err != nil {
					return inv, err
				}
			}
		}
		if tok.p == nil {
			next, err := e.slice(ctx, invID, dispatch, own, &m)
			own = nil
			if err != nil {
				return inv, err
			}
			if tok = next; tok.p == nil {
				continue
			}
		}
		meta, ok := tok.consume(e)
		if !ok {
			return inv, unknown(tok.p.meta.Operation, tok.p.meta.Attempt, "drive: the token was already consumed")
		}
		res, next, err := e.dispatchNext(ctx, meta, true)
		if err != nil {
			return inv, err
		}
		if res.Outcome == nil {
			return inv, unknown(res.Operation, res.Attempt, "drive: "+res.Unknown)
		}
		own = next
	}
}

// closeReservation closes a reservation this engine made for a slice it
// did not run: nothing of it was used.
func (e *Engine) closeReservation(ctx context.Context, r *store.Reservation) {
	err := e.write(ctx, func(tx store.FencingTx) error {
		cur, err := tx.Reservation(r.Invocation)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if cur.Boot != r.Boot || !cur.Created.Equal(r.Created) || cur.Base != r.Base {
			return nil // not the one this drive made
		}
		return tx.Charge(r.Invocation, 0)
	})
	if err != nil {
		e.log.Warn("close an unused reservation: the next drive recovers it", "invocation", r.Invocation, "err", err)
	}
}

// reserveNext reserves the next slice of a driven invocation inside the
// transaction that recorded its last outcome, when the slice may run
// (the checks of plan and reserveFor); nil when it may not, and then
// nothing is written and the next Drive plans it as usual.
func (e *Engine) reserveNext(tx store.FencingTx, invID string) (*store.Reservation, error) {
	inv, err := tx.Invocation(invID)
	if err != nil {
		return nil, nil
	}
	root, _, err := authority(tx, management("run", inv.Prog))
	if err != nil || inv.Status.Terminal() || inv.Held != 0 || inv.Epoch != root.Epoch || free(inv) == 0 {
		return nil, nil
	}
	if p, err := tx.Prog(inv.Prog); err != nil || p.State != store.ProgActive {
		return nil, nil
	}
	r := &store.Reservation{Invocation: inv.ID, Steps: min(free(inv), e.cfg.ReservationSteps), Base: inv.Charged,
		Boot: e.cfg.Boot, Created: e.now()}
	// Reserve checks before it writes: a refusal leaves the outcome's
	// transaction as it was.
	if err := tx.Reserve(r); err != nil {
		if errors.Is(err, store.ErrInvariant) || errors.Is(err, store.ErrConflict) {
			return nil, nil
		}
		return nil, err
	}
	return r, nil
}

// memo is what one Drive keeps between its slices: the decoded program
// and the log entries it has read and checked. A consumed operation, its
// attempt and its outcome never change again, so the next slice reads
// only what is new. Witnesses stay encoded here: they are decoded by
// each run, under the VM's bound.
type memo struct {
	particle neuron.Particle
	program  noun.Noun
	log      []logEntry
}

// pairsAt is the witnesses' pairs of the first n entries.
func (m *memo) pairsAt(n uint64) uint64 {
	var pairs uint64
	for _, ent := range m.log[:n] {
		if ent.outcome.Kind == store.OutcomeValue {
			pairs += tokenPairs(ent.outcome.Value)
		}
	}
	return pairs
}

// readLogEntry reads and checks the operation of an ordinal below the
// invocation's: consumed, or the pending one with its outcome; the one
// its attempt authorized; its outcome's value a noun.
func readLogEntry(tx store.FencingTx, inv *store.Invocation, ord uint64) (logEntry, error) {
	op, err := tx.Operation(store.OperationID(inv.Neuron, inv.Prog, inv.ID, ord))
	if err != nil {
		return logEntry{}, storeError(err)
	}
	last := ord+1 == inv.Ordinal
	switch {
	case op.Ordinal != ord || op.Invocation != inv.ID:
		return logEntry{}, refuse(Conflict, "run: operation %s has ordinal %d at %d", op.ID, op.Ordinal, ord)
	case op.Stage == store.StageConsumed:
	case last && op.ID == inv.Pending && op.Stage == store.StageOutcome:
	default:
		return logEntry{}, refuse(Conflict, "run: operation %s (ordinal %d) is %s", op.ID, ord, op.Stage)
	}
	a, err := tx.ActAttempt(op.ID, op.Attempt)
	if err != nil {
		return logEntry{}, storeError(err)
	}
	if !bytes.Equal(a.OpDigest, store.OperationDigest(op)) {
		return logEntry{}, refuse(Conflict, "run: operation %s is not the one its attempt authorized", op.ID)
	}
	o, err := tx.Outcome(op.ID, op.Attempt)
	if err != nil {
		return logEntry{}, storeError(err)
	}
	if o.Kind == store.OutcomeValue {
		if err := store.CheckNoun(o.Value); err != nil {
			return logEntry{}, refuse(Conflict, "run: the outcome of %s does not decode: %v", op.ID, err)
		}
	}
	return logEntry{op: op, outcome: o}, nil
}

// state reads an invocation and its pending operation.
func (e *Engine) state(ctx context.Context, invID string) (*store.Invocation, *store.Operation, error) {
	var inv *store.Invocation
	var op *store.Operation
	err := e.view(ctx, func(tx store.FencingTx) (err error) {
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
	root     *store.Root
	program  noun.Noun
	particle neuron.Particle // the program's
	log      []logEntry
	logPairs uint64 // pairs of the log's witnesses
	reserved uint64
	pending  string // the pending operation whose outcome the log ends with
	// staleBy is the prog's current revision when the invocation runs an
	// older one (nil otherwise): it ends as a conflict.
	staleBy *store.Prog
	// goesOn is set by settle when the invocation goes on after the
	// slice (it did not end it).
	goesOn bool
	// fenced: a restore fenced the invocation, and what it proposes is
	// recorded attempted by a restored attempt (restored.go).
	fenced bool
}

// slice reserves steps durably, runs the program once from the start
// with replay, and records what the run reached together with the charge.
//
// When the run suspends at an act and prepare is set, the proposal and
// its attempt for this engine's worker are recorded in one transaction
// (the attempt signed before it), and the token is returned: the same
// checks as Prepare, one commit fewer. If they refuse, the proposal
// stays for Prepare, Take or a later Drive.
//
// own is a reservation already made for this slice (with the outcome
// before it), or nil: then the slice reserves first.
func (e *Engine) slice(ctx context.Context, invID string, prepare bool, own *store.Reservation, m *memo) (DispatchToken, error) {
	// The plan (checks, program, outcome log) is read outside the write:
	// the group commit's one writer only re-checks the invocation and
	// reserves.
	var plan *slicePlan
	err := e.view(ctx, func(tx store.FencingTx) (err error) {
		plan, err = e.plan(tx, invID, own, m)
		return err
	})
	switch {
	case err != nil && own != nil:
		e.closeReservation(context.WithoutCancel(ctx), own)
	case err == nil && own == nil:
		err = e.write(ctx, func(tx store.FencingTx) error { return e.reserveFor(tx, plan) })
	}
	if errors.Is(err, errNoSteps) {
		return DispatchToken{}, e.endInvocation(ctx, invID, store.InvocationFailed, nil,
			protocol.Errorf(protocol.CodeBudgetExhausted, "the invocation used its step limit"))
	}
	if err != nil {
		return DispatchToken{}, err
	}
	run := e.run(ctx, plan)
	var pro *proposal
	if errors.Is(run.err, errSuspend) {
		// A drive cancelled by now records the proposal only: an
		// attempt it recorded would have to be dispatched (see
		// claimAndCall), and the next drive prepares it instead.
		if pro, err = e.propose(plan, run.suspend, prepare && ctx.Err() == nil); err != nil {
			return DispatchToken{}, err
		}
	}
	if pro != nil && pro.attempt != nil {
		crashpoint("before-attempt")
	}
	var tok DispatchToken
	err = e.write(context.WithoutCancel(ctx), func(tx store.FencingTx) (err error) {
		tok, err = e.settle(tx, plan, run, pro)
		return err
	})
	if err == nil {
		e.settled(plan, run)
	}
	return tok, err
}

// proposal is the operation a suspended run proposes, built (with its
// id and, to prepare it, its signed attempt) outside the transaction that
// records it.
type proposal struct {
	op      *store.Operation
	attempt *store.ActAttempt
}

func (e *Engine) propose(plan *slicePlan, s *suspension, prepare bool) (*proposal, error) {
	inv, root := plan.inv, plan.root
	op := &store.Operation{ID: store.OperationID(inv.Neuron, inv.Prog, inv.ID, inv.Ordinal), Neuron: inv.Neuron,
		Network: inv.Network, Prog: inv.Prog, Invocation: inv.ID, Ordinal: inv.Ordinal, Tag: s.tag, Argument: s.argument,
		Policy: root.Policy, Epoch: root.Epoch, Created: e.now()}
	op.Updated = op.Created
	pro := &proposal{op: op}
	if plan.fenced {
		// Whether or not this drive dispatches: nothing of a fenced
		// invocation ever is, and its proposal is unknown at once.
		a, err := e.restoredAttempt(op, root)
		if err != nil {
			return nil, err
		}
		if err := e.trust.Preverify(a); err != nil {
			return nil, storeError(err)
		}
		pro.attempt = a
		return pro, nil
	}
	mine := e.Descriptor(root.Network)
	if !prepare || root.Generation == 0 || root.Worker == nil || !root.Worker.Equal(mine) ||
		!slices.Contains(mine.Acts, s.tag) || uint64(len(s.argument)) > mine.MaxArgumentBytes {
		return pro, nil
	}
	a := &store.ActAttempt{Operation: op.ID, N: 1, Neuron: op.Neuron, Network: op.Network, Prog: op.Prog,
		Invocation: op.Invocation, Tag: op.Tag, OpDigest: store.OperationDigest(op), Executor: store.ExecutorWorker,
		Worker: &mine, Generation: root.Generation, Policy: root.Policy, Epoch: root.Epoch, Created: e.now()}
	var err error
	if a.Authorization, err = e.sign(a.Statement()); err != nil {
		return nil, err
	}
	if err := e.trust.Preverify(a); err != nil {
		return nil, storeError(err)
	}
	pro.attempt = a
	return pro, nil
}

var errNoSteps = refuse(Budget, "the invocation used its step limit")

// reserve plans a slice and reserves its steps in one transaction (what
// a slice does before it runs, for tests that crash it there).
func (e *Engine) reserve(tx store.FencingTx, invID string) (*slicePlan, error) {
	plan, err := e.plan(tx, invID, nil, nil)
	if err != nil {
		return nil, err
	}
	return plan, e.reserveFor(tx, plan)
}

// reserveFor re-checks the planned invocation (it must not have moved:
// this process drives it under its lock) and reserves the plan's steps.
func (e *Engine) reserveFor(tx store.FencingTx, plan *slicePlan) error {
	inv, err := tx.Invocation(plan.inv.ID)
	if err != nil {
		return storeError(err)
	}
	p := plan.inv
	if inv.Status != p.Status || inv.Charged != p.Charged || inv.Held != p.Held || inv.Ordinal != p.Ordinal ||
		inv.Pending != p.Pending || inv.Epoch != p.Epoch {
		return refuse(Conflict, "run: invocation %s changed while its slice was planned", inv.ID)
	}
	root, _, err := authority(tx, management("run", inv.Prog))
	if err != nil {
		return err
	}
	if inv.Epoch != root.Epoch {
		return refuse(Denied, "run: invocation %s is at epoch %d, the neuron at %d (rebind it)", inv.ID, inv.Epoch, root.Epoch)
	}
	r := &store.Reservation{Invocation: inv.ID, Steps: plan.reserved, Base: inv.Charged, Boot: e.cfg.Boot, Created: e.now()}
	return storeError(tx.Reserve(r))
}

// plan checks that the invocation may run now and reads what its slice
// runs. It reserves all the steps the invocation has left (or at most
// ReservationSteps, when the engine caps slices): one reservation takes
// the run to its next act or its end. With own, the slice runs on that
// reservation, made already.
func (e *Engine) plan(tx store.FencingTx, invID string, own *store.Reservation, m *memo) (*slicePlan, error) {
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
	case own != nil && (inv.Held != own.Steps || inv.Charged != own.Base):
		return nil, refuse(Conflict, "run: invocation %s is not at the reservation made for it", inv.ID)
	case own == nil && inv.Held != 0:
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
	fenced, err := fencedInvocation(tx, inv)
	if err != nil {
		return nil, err
	}
	plan, err := e.readPlan(tx, inv, root, p, own, m)
	if plan != nil {
		plan.fenced = fenced
	}
	return plan, err
}

// readPlan reads what a slice of inv runs (its revision's program and
// its outcome log), once plan has checked that it may run, or for a
// replay of a crashed slice (replayCharge). With own, on that
// reservation.
func (e *Engine) readPlan(tx store.FencingTx, inv *store.Invocation, root *store.Root, p *store.Prog, own *store.Reservation, m *memo) (*slicePlan, error) {
	var err error
	// The invocation runs the revision it was started at.
	rp, stale := p, inv.ProgRevision != p.Revision
	if stale {
		if rp, err = tx.ProgRevision(p.ID, inv.ProgRevision); err != nil {
			return nil, storeError(err)
		}
	}
	if m == nil {
		m = &memo{}
	}
	if m.program.IsAtom() || m.particle != rp.Particle {
		program, err := store.DecodeNoun(rp.Program)
		if err != nil {
			return nil, refuse(Conflict, "run: prog %s does not decode: %v", p.ID, err)
		}
		m.program, m.particle = program, rp.Particle
	}
	plan := &slicePlan{inv: inv, root: root, program: m.program, particle: m.particle}
	if stale {
		plan.staleBy = p
	}
	// Consumed operations never change: those this drive checked already
	// are taken as they were; the pending one is read again.
	reuse := min(uint64(len(m.log)), inv.Ordinal)
	if inv.Pending != "" && reuse == inv.Ordinal {
		reuse--
	}
	m.log = m.log[:reuse]
	for ord := reuse; ord < inv.Ordinal; ord++ {
		ent, err := readLogEntry(tx, inv, ord)
		if err != nil {
			return nil, err
		}
		m.log = append(m.log, ent)
	}
	for i := range m.log {
		if m.log[i].op.ID == inv.Pending {
			plan.pending = inv.Pending
		}
	}
	plan.log = slices.Clone(m.log)
	plan.logPairs = m.pairsAt(uint64(len(m.log)))
	if own != nil {
		plan.reserved = own.Steps
		return plan, nil
	}
	available := free(inv)
	if available == 0 {
		return nil, errNoSteps
	}
	plan.reserved = min(available, e.cfg.ReservationSteps)
	return plan, nil
}

// free is what an invocation may still reserve: its limit less what is
// charged, delegated to children and held.
func free(inv *store.Invocation) uint64 { return inv.Limit - inv.Charged - inv.Delegated - inv.Held }
