package fencing

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// TestDispatchProperties drives one home with random sequences of bind,
// release, grant replacement and revocation, policy change, invoke,
// advance, prepare, dispatch (the act giving a value, failing, saying
// unknown or panicking), crash and reopen (also with a reservation left
// open), reconcile, cancel, rebind, take and drive, and checks after
// every step, and inside every act call:
//   - never two claims for one attempt, never a second act call for one
//     operation (an unknown attempt is never redispatched, not even after
//     a restart);
//   - never an act call without its claim, and never one that a
//     revocation or replacement ordered before its claim would forbid:
//     inside the call, the store's current root and grant still permit it;
//   - charged + delegated + held never exceeds the limit, and charged
//     never goes down;
//   - no act is called for an invocation of a prog revision an upgrade
//     replaced (children, upgrades and archives are among the steps);
//   - at the end the store's own check finds no problem.
func TestDispatchProperties(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); raceEnabled && f != nil && f.Value.String() == f.DefValue {
		f.Value.Set("30")
		defer f.Value.Set(f.DefValue)
	}
	progOnce := parse(t, callOnInput(tagCount))
	progTwice := parse(t, callTwice(tagCount))
	var totalCalls, completed, unknownLeft int
	defer func() {
		t.Logf("act calls %d, invocations completed %d, attempts left unknown %d", totalCalls, completed, unknownLeft)
	}()
	rapid.Check(t, func(rt *rapid.T) {
		// Without fsync: every step may reopen the store, and a reopen
		// in one process loses nothing either way.
		h := newHarnessSync(t, false)
		h.fatalf = rt.Fatalf
		// Room for one or two parked runs, or the default: evictions,
		// and second replays charged, among the steps.
		if h.maxParked = rapid.IntRange(0, 2).Draw(rt, "parked"); h.maxParked != 0 {
			h.e = h.engine("boot-small-lot")
		}
		calls := map[string]int{}
		// Violations seen inside act calls, reported after the step: a
		// failure inside the act would be taken for the act's panic.
		var violations []string
		h.count.onCall = func(c hostact.Call) {
			calls[c.Operation]++
			if calls[c.Operation] > 1 {
				violations = append(violations, fmt.Sprintf("operation %s: act call %d", c.Operation, calls[c.Operation]))
			}
			// Inside the call the guard is held: the state must be what
			// the claim was committed under.
			err := h.st.Local().View(ctx, func(tx store.LocalTx) error {
				if _, err := tx.Claim(c.Operation, c.Attempt); err != nil {
					return fmt.Errorf("no claim: %w", err)
				}
				root, err := tx.Root()
				if err != nil {
					return err
				}
				if root.Generation != c.Generation || root.Worker == nil || root.Worker.Executor.BootID != h.e.Boot() {
					return fmt.Errorf("the placement moved to %d before the call", root.Generation)
				}
				g, err := tx.Grant()
				if err != nil {
					return err
				}
				if err := check(root, g, action{name: "property", prog: c.Prog, act: c.Tag, hasAct: true}); err != nil {
					return fmt.Errorf("a revocation came before the call: %w", err)
				}
				inv, err := tx.Invocation(c.Invocation)
				if err != nil {
					return err
				}
				p, err := tx.Prog(c.Prog)
				if err != nil {
					return err
				}
				if inv.ProgRevision != p.Revision {
					return fmt.Errorf("an upgrade to revision %d came before the call of revision %d", p.Revision, inv.ProgRevision)
				}
				return nil
			})
			if err != nil {
				violations = append(violations, fmt.Sprintf("act call for %s: %v", c.Operation, err))
			}
		}
		h.grant(tagCount)
		h.bind()
		var progs []*store.Prog
		for _, prog := range []noun.Noun{progOnce, progTwice} {
			p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: prog, Acts: []uint64{tagCount}, StepLimit: 40, MaxInFlight: 8})
			h.must(err)
			progs = append(progs, p)
		}
		var invs []string
		var tokens []DispatchToken
		charged := map[string]uint64{}
		pickInv := func(label string) (string, bool) {
			if len(invs) == 0 {
				return "", false
			}
			return rapid.SampledFrom(invs).Draw(rt, label), true
		}
		steps := rapid.IntRange(20, 100).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			switch rapid.SampledFrom(weightedActions).Draw(rt, "action") {
			case 0: // bind this boot, with a right or a stale expectation
				r, err := h.e.Root(ctx)
				h.must(err)
				exp := r.Generation
				if chance(rt, 3, "stale") {
					exp--
				}
				_, err = h.e.Bind(ctx, exp)
				allowRefusal(rt, "bind", err, Conflict, Denied)
			case 1: // release
				r, err := h.e.Root(ctx)
				h.must(err)
				_, err = h.e.Release(ctx, r.Generation)
				allowRefusal(rt, "release", err, Denied)
			case 2: // grant: replace (with or without the act) or revoke
				g, err := h.e.Grant(ctx)
				h.must(err)
				var acts []uint64
				if chance(rt, 8, "grant act") {
					acts = []uint64{tagCount}
				}
				_, err = h.e.SetGrant(ctx, g.Revision, GrantSpec{Acts: acts, Disabled: chance(rt, 2, "disabled")})
				h.must(err)
			case 3: // policy change, then usually a grant for it
				r, err := h.e.Root(ctx)
				h.must(err)
				_, err = h.e.ChangePolicy(ctx, neuron.Particle{byte(i)}, r.Epoch+1)
				h.must(err)
				if chance(rt, 8, "regrant") {
					h.grant(tagCount)
				}
			case 4: // invoke
				p := rapid.SampledFrom(progs).Draw(rt, "prog")
				inv, err := h.e.Invoke(ctx, p.ID, []uint64{uint64(i)})
				if err == nil {
					invs = append(invs, inv.ID)
				}
				allowRefusal(rt, "invoke", err, Denied, Busy)
			case 5: // advance
				if id, ok := pickInv("advance"); ok {
					_, err := h.e.Advance(ctx, id)
					allowRefusal(rt, "advance", err, Denied, Lifecycle, Budget)
				}
			case 6: // advance to the next act and prepare it
				if id, ok := pickInv("prepare"); ok {
					_, err := h.e.Advance(ctx, id)
					allowRefusal(rt, "advance", err, Denied, Lifecycle, Budget)
					tok, err := h.e.Prepare(ctx, id)
					if err == nil {
						tokens = append(tokens, tok)
					}
					allowRefusal(rt, "prepare", err, Fenced, Denied, UnknownOutcome, Missing, Conflict, Lifecycle)
				}
			case 7, 8: // dispatch a token (maybe consumed, maybe of an old boot)
				if len(tokens) == 0 {
					continue
				}
				tok := rapid.SampledFrom(tokens).Draw(rt, "token")
				h.count.set(rapid.SampledFrom([]string{"", "", "fail", "unknown", "panic"}).Draw(rt, "act"))
				_, err := h.e.Dispatch(ctx, tok)
				allowRefusal(rt, "dispatch", err, Fenced, Denied, UnknownOutcome, Conflict, Lifecycle)
				h.count.set("")
			case 9: // crash and reopen with a new boot
				h.reopen()
				tokens = nil // a token does not survive its process
				if rapid.Bool().Draw(rt, "bind boot") {
					_, err := h.e.BindBoot(ctx)
					allowRefusal(rt, "bind boot", err, Denied)
				}
			case 10: // reconcile an attempt
				ops, err := h.e.Operations(ctx, "")
				h.must(err)
				var cands []OperationView
				for _, op := range ops {
					if len(op.Attempts) > 0 {
						cands = append(cands, op)
					}
				}
				if len(cands) == 0 {
					continue
				}
				op := rapid.SampledFrom(cands).Draw(rt, "reconcile")
				spec := OutcomeSpec{Value: noun.Atom(uint64(rapid.IntRange(0, 2).Draw(rt, "value")))}
				if rapid.Bool().Draw(rt, "failed") {
					spec = OutcomeSpec{Failed: true, Message: "reconciled as failed"}
				}
				_, _, err = h.e.Reconcile(ctx, op.ID, 1, spec)
				allowRefusal(rt, "reconcile", err, Conflict, Denied)
			case 11: // cancel
				if id, ok := pickInv("cancel"); ok {
					_, err := h.e.Cancel(ctx, id, "")
					allowRefusal(rt, "cancel", err, UnknownOutcome, Lifecycle, Denied)
				}
			case 12: // take
				if id, ok := pickInv("take"); ok {
					_, err := h.e.Take(ctx, id)
					allowRefusal(rt, "take", err, Denied, UnknownOutcome, Missing, Conflict, Lifecycle)
				}
			case 13: // rebind
				if id, ok := pickInv("rebind"); ok {
					_, err := h.e.Rebind(ctx, id)
					allowRefusal(rt, "rebind", err, Busy, Denied, Lifecycle)
				}
			case 14: // drive (dispatching through the engine's own worker)
				if id, ok := pickInv("drive"); ok {
					h.count.set(rapid.SampledFrom([]string{"", "", "fail", "unknown", "panic"}).Draw(rt, "act"))
					_, err := h.e.Drive(ctx, id)
					allowRefusal(rt, "drive", err, Fenced, Denied, UnknownOutcome, Lifecycle, Budget, Conflict, Missing)
					h.count.set("")
				}
			case 16: // prepare, maybe revoke or replace, then dispatch
				id, ok := pickInv("prepare-dispatch")
				if !ok {
					continue
				}
				_, err := h.e.Advance(ctx, id)
				allowRefusal(rt, "advance", err, Denied, Lifecycle, Budget)
				tok, err := h.e.Prepare(ctx, id)
				allowRefusal(rt, "prepare", err, Fenced, Denied, UnknownOutcome, Missing, Conflict, Lifecycle)
				if err != nil {
					continue
				}
				switch rapid.IntRange(0, 4).Draw(rt, "between") {
				case 1: // revoke the act
					g, err := h.e.Grant(ctx)
					h.must(err)
					_, err = h.e.SetGrant(ctx, g.Revision, GrantSpec{Disabled: chance(rt, 5, "disable")})
					h.must(err)
				case 2: // another boot replaces this one
					_, err := h.engine("other").BindBoot(ctx)
					allowRefusal(rt, "replace", err, Denied)
				case 3: // a new policy, with a full grant for it
					r, err := h.e.Root(ctx)
					h.must(err)
					_, err = h.e.ChangePolicy(ctx, neuron.Particle{byte(i), 1}, r.Epoch+1)
					h.must(err)
					h.grant(tagCount)
				case 4: // an upgrade of its prog
					v, err := h.e.Invocation(ctx, id)
					h.must(err)
					cur, err := h.e.Prog(ctx, v.Prog)
					h.must(err)
					next := progOnce
					if cur.Particle == neuron.Particle(progOnce.Particle()) {
						next = progTwice
					}
					_, _, err = h.e.UpgradeProg(ctx, cur.ID, cur.Revision, ProgSpec{Program: next, Acts: []uint64{tagCount}})
					allowRefusal(rt, "upgrade", err, Denied)
				}
				_, err = h.e.Dispatch(ctx, tok)
				allowRefusal(rt, "dispatch", err, Fenced, Denied, UnknownOutcome, Conflict, Lifecycle)
			case 17: // a child of a live invocation, on a delegated allowance
				if id, ok := pickInv("parent"); ok {
					p := rapid.SampledFrom(progs).Draw(rt, "child prog")
					allow := uint64(rapid.IntRange(0, 30).Draw(rt, "allowance"))
					inv, err := h.e.InvokeWith(ctx, InvokeSpec{Prog: p.ID, Inputs: []uint64{uint64(i)}, Parent: id, Allowance: allow})
					if err == nil {
						invs = append(invs, inv.ID)
					}
					allowRefusal(rt, "invoke child", err, Denied, Busy, Budget, Lifecycle)
				}
			case 18: // upgrade a prog to the other program, or back
				k := rapid.IntRange(0, 1).Draw(rt, "upgraded")
				cur, err := h.e.Prog(ctx, progs[k].ID)
				h.must(err)
				next := []noun.Noun{progOnce, progTwice}[(k+int(cur.Revision)+1)%2]
				exp := cur.Revision
				if chance(rt, 2, "stale revision") {
					exp++
				}
				_, _, err = h.e.UpgradeProg(ctx, cur.ID, exp, ProgSpec{Program: next, Acts: []uint64{tagCount}})
				allowRefusal(rt, "upgrade", err, Denied, Conflict)
			case 19: // archive a tree
				if id, ok := pickInv("archive"); ok {
					err := h.e.Archive(ctx, id)
					allowRefusal(rt, "archive", err, Denied, Lifecycle)
					if err == nil {
						invs = slices.DeleteFunc(invs, func(id string) bool {
							v, err := h.e.Invocation(ctx, id)
							h.must(err)
							return v.Archived
						})
					}
				}
			case 15: // crash in the middle of a slice: its reservation stays open
				if id, ok := pickInv("crash slice"); ok {
					err := h.e.write(ctx, func(tx store.FencingTx) error { _, err := h.e.reserve(tx, id); return err })
					allowRefusal(rt, "reserve", err, Denied, Lifecycle, Busy, Budget, Conflict)
					h.reopen()
					tokens = nil
				}
			}
			if len(violations) > 0 {
				rt.Fatalf("inside act calls: %v", violations)
			}
			checkAccounts(rt, h, charged)
			checkKeptRuns(rt, h)
		}
		// Whatever the sequence did, the store's own cross-check of every
		// record (trees, revisions, signatures) finds nothing.
		rep, err := h.st.Check(ctx)
		if err != nil || len(rep.Problems) != 0 {
			rt.Fatalf("store check: %v %v", err, rep.Problems)
		}
		totalCalls += len(calls)
		for _, id := range invs {
			v, err := h.e.Invocation(ctx, id)
			h.must(err)
			if v.Status == store.InvocationCompleted {
				completed++
			}
			for _, op := range v.Operations {
				for _, a := range op.Attempts {
					if a.Unknown {
						unknownLeft++
					}
				}
			}
		}
	})
}

// weightedActions makes the common path (invoke, advance, prepare,
// dispatch, drive, reconcile) likelier than what breaks it.
var weightedActions = []int{
	0, 0, 1, 2, 2, 3,
	4, 4, 4, 4, 5, 5, 5,
	6, 6, 6, 6, 7, 7, 7, 8, 8,
	9, 9, 10, 10, 10, 11, 12, 13, 13,
	14, 14, 14, 14, 14, 15,
	16, 16, 16, 17, 17, 18, 19,
}

// chance is true with probability tenths/10.
func chance(rt *rapid.T, tenths int, label string) bool {
	return rapid.IntRange(0, 9).Draw(rt, label) < tenths
}

// allowRefusal fails on any error but the listed refusals.
func allowRefusal(rt *rapid.T, what string, err error, allowed ...Refusal) {
	if err == nil {
		return
	}
	e, ok := AsRefusal(err)
	if !ok || !slices.Contains(allowed, e.Refusal) {
		rt.Fatalf("%s: %v", what, err)
	}
}

// checkKeptRuns: the runs the engine keeps are of live invocations, one
// goroutine each at most, and the lot within its bounds.
func checkKeptRuns(rt *rapid.T, h *harness) {
	p := &h.e.lot
	p.mu.Lock()
	var ids []string
	for id := range p.runs {
		ids = append(ids, id)
	}
	count, cells := p.count, p.cells
	p.mu.Unlock()
	if count > p.maxRuns || cells > p.maxCells {
		rt.Fatalf("%d runs parked holding %d pairs, at most %d and %d", count, cells, p.maxRuns, p.maxCells)
	}
	if n := h.e.stats.goroutines.Load(); n > int64(len(ids)) {
		rt.Fatalf("%d run goroutines for %d kept runs", n, len(ids))
	}
	for _, id := range ids {
		if v := h.view(id); v.Status.Terminal() {
			rt.Fatalf("a run is kept for invocation %s, which ended %s", id, v.Status)
		}
	}
}

// checkAccounts: charged + held ≤ limit, charged never decreases, and
// every attempt has at most one claim (its key is unique) and a claim
// only for a worker attempt.
func checkAccounts(rt *rapid.T, h *harness, charged map[string]uint64) {
	err := h.st.Local().View(ctx, func(tx store.LocalTx) error {
		if err := tx.ForEachInvocation(func(inv *store.Invocation) bool {
			if inv.Charged+inv.Delegated+inv.Held > inv.Limit {
				rt.Fatalf("invocation %s: charged %d + delegated %d + held %d > limit %d", inv.ID, inv.Charged, inv.Delegated, inv.Held, inv.Limit)
			}
			if inv.Charged < charged[inv.ID] {
				rt.Fatalf("invocation %s: charged went from %d down to %d", inv.ID, charged[inv.ID], inv.Charged)
			}
			charged[inv.ID] = inv.Charged
			return true
		}); err != nil {
			return err
		}
		return tx.ForEachOperation(func(op *store.Operation) bool {
			atts, err := tx.ActAttempts(op.ID)
			if err != nil {
				rt.Fatalf("attempts of %s: %v", op.ID, err)
			}
			if len(atts) > 1 {
				rt.Fatalf("operation %s has %d attempts", op.ID, len(atts))
			}
			for _, a := range atts {
				c, err := tx.Claim(op.ID, a.N)
				if err == nil && a.Executor != store.ExecutorWorker {
					rt.Fatalf("a %s attempt has a claim", a.Executor)
				}
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					rt.Fatalf("claim of %s: %v", op.ID, err)
				}
				_ = c
			}
			return true
		})
	})
	if err != nil {
		rt.Fatalf("check: %v", err)
	}
}
