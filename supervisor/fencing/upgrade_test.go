package fencing

import (
	"fmt"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// wantStale checks that an invocation ended as a conflict of a replaced
// revision (stale_state), with the result it reached (-1: none).
func wantStale(t *testing.T, h *harness, id string, result int64) {
	t.Helper()
	v := h.view(id)
	if v.Status != store.InvocationConflict || v.Error == nil || v.Error.Code != protocol.CodeStaleState {
		t.Fatalf("invocation %s is %s (%v), want a stale conflict", id, v.Status, v.Error)
	}
	switch {
	case result < 0 && v.Result != nil:
		t.Fatalf("invocation %s kept a result it never reached", id)
	case result >= 0 && (v.Result == nil || atomOf(t, v.Result) != uint64(result)):
		t.Fatalf("invocation %s: result %v, want %d kept", id, v.Result, result)
	}
	if v.Pending != "" {
		t.Fatalf("invocation %s still has operation %s pending", id, v.Pending)
	}
}

// TestUpgradeEndsStaleInvocations: an upgrade makes the next revision of
// a prog (a CAS on its revision, idempotent for the same spec). What
// the replaced revision had in flight acts no more: a proposal is
// dropped, a prepared token is refused before its claim, an unknown
// attempt stays unknown until reconciled; each ends `conflict`
// (stale_state), keeping a result its own revision reached without
// another act. New invocations run the new revision.
func TestUpgradeEndsStaleInvocations(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	h.bind()
	once, twice := parse(t, callOnInput(tagCount)), parse(t, callTwice(tagCount))
	p := h.install(callOnInput(tagCount), tagCount)

	proposed := h.invoke(p, 1)
	h.awaiting(proposed)
	prepared := h.invoke(p, 2)
	h.awaiting(prepared)
	tok, err := h.e.Prepare(ctx, prepared.ID)
	h.must(err)
	unknownInv := h.invoke(p, 3)
	h.count.set("unknown")
	_, err = h.e.Drive(ctx, unknownInv.ID)
	wantRefusal(t, "drive to an unknown act", err, UnknownOutcome)
	h.count.set("")
	wantCalls(t, "before the upgrade", h.count, 1)

	up, created, err := h.e.UpgradeProg(ctx, p.ID, 0, ProgSpec{Program: twice, Acts: []uint64{tagCount}, StepLimit: 5000})
	h.must(err)
	if !created || up.ID != p.ID || up.Revision != 1 || up.StepLimit != 5000 || up.MaxInFlight != p.MaxInFlight || up.State != store.ProgActive {
		t.Fatalf("upgraded: %+v created %v", up, created)
	}
	again, created, err := h.e.UpgradeProg(ctx, p.ID, 0, ProgSpec{Program: twice, Acts: []uint64{tagCount}, StepLimit: 5000})
	if err != nil || created || again.Revision != 1 {
		t.Fatalf("the same upgrade again: %+v %v %v", again, created, err)
	}
	_, _, err = h.e.UpgradeProg(ctx, p.ID, 0, ProgSpec{Program: once, Acts: []uint64{tagCount}})
	wantRefusal(t, "an upgrade from a stale revision", err, Conflict)
	_, _, err = h.e.UpgradeProg(ctx, p.ID, 1, ProgSpec{Program: once, Acts: []uint64{tagHost}})
	wantRefusal(t, "an upgrade requesting an act the grant does not give", err, Denied)
	_, _, err = h.e.InstallProg(ctx, ProgSpec{Program: once, Acts: []uint64{tagCount}, StepLimit: 10000})
	wantRefusal(t, "installing the first revision's program again", err, Conflict)

	// The token prepared before the upgrade is refused before its claim.
	_, err = h.e.Dispatch(ctx, tok)
	wantRefusal(t, "dispatch of a replaced revision's token", err, Conflict)
	wantCalls(t, "after the refused dispatch", h.count, 1)
	pv := h.view(prepared.ID)
	if h.claimOf(pv.Pending, 1) != nil {
		t.Fatal("a refused dispatch left a claim")
	}
	_, err = h.e.Drive(ctx, prepared.ID)
	wantRefusal(t, "drive of the prepared attempt", err, UnknownOutcome)

	// The proposal nobody attempted is dropped without an effect.
	pending := h.view(proposed.ID).Pending
	_, err = h.e.Take(ctx, proposed.ID)
	wantRefusal(t, "a manual take for a replaced revision", err, Conflict)
	got, err := h.e.Drive(ctx, proposed.ID)
	h.must(err)
	wantStale(t, h, got.ID, -1)
	if op, err := h.e.Operation(ctx, pending); err != nil || op.Stage != store.StageConsumed || len(op.Attempts) != 0 {
		t.Fatalf("the dropped proposal: %+v %v", op, err)
	}

	// Reconciled attempts are taken; their revision's program ends with
	// the outcome: the result is kept, stale.
	for _, c := range []struct {
		id    string
		value uint64
	}{{prepared.ID, 20}, {unknownInv.ID, 30}} {
		v := h.view(c.id)
		_, _, err := h.e.Reconcile(ctx, v.Pending, 1, OutcomeSpec{Value: parse(t, fmt.Sprint(c.value))})
		h.must(err)
		_, err = h.e.Drive(ctx, c.id)
		h.must(err)
		wantStale(t, h, c.id, int64(c.value))
	}
	wantCalls(t, "stale invocations ended", h.count, 1)

	// Revision 1 runs for new invocations; one of them, halfway when the
	// prog moves on to revision 2, proposes nothing more.
	half := h.invoke(up, 4)
	h.count.set("unknown")
	_, err = h.e.Drive(ctx, half.ID)
	wantRefusal(t, "drive of revision 1 to an unknown act", err, UnknownOutcome)
	h.count.set("")
	wantCalls(t, "revision 1's first act", h.count, 2)
	r2, _, err := h.e.UpgradeProg(ctx, p.ID, 1, ProgSpec{Program: once, Acts: []uint64{tagCount}})
	h.must(err)
	if r2.Revision != 2 || r2.StepLimit != 5000 || r2.Particle != p.Particle {
		t.Fatalf("revision 2: %+v", r2)
	}
	_, _, err = h.e.Reconcile(ctx, h.view(half.ID).Pending, 1, OutcomeSpec{Value: parse(t, "4")})
	h.must(err)
	_, err = h.e.Drive(ctx, half.ID)
	h.must(err)
	wantStale(t, h, half.ID, -1)
	if v := h.view(half.ID); v.Ordinal != 1 || len(v.Operations) != 1 {
		t.Fatalf("the stale invocation proposed again: ordinal %d, %d operations", v.Ordinal, len(v.Operations))
	}
	wantCalls(t, "the stale second act", h.count, 2)

	fresh := h.invoke(r2, 9)
	if fresh.ProgRevision != 2 || fresh.Limit != 5000 {
		t.Fatalf("a new invocation: revision %d limit %d", fresh.ProgRevision, fresh.Limit)
	}
	done, err := h.e.Drive(ctx, fresh.ID)
	h.must(err)
	if done.Status != store.InvocationCompleted || atomOf(t, done.Result) != 9 {
		t.Fatalf("revision 2's invocation: %s %v", done.Status, done.Error)
	}
	wantCalls(t, "revision 2's act", h.count, 3)

	revs, err := h.e.ProgRevisions(ctx, p.ID)
	h.must(err)
	if len(revs) != 3 || revs[0].Particle != p.Particle || revs[1].Particle != up.Particle || revs[2].Revision != 2 ||
		revs[0].StepLimit != p.StepLimit {
		t.Fatalf("revisions: %d", len(revs))
	}
	rep, err := h.st.Check(ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("store check: %v %v", err, rep.Problems)
	}
	if _, err := h.e.RetireProg(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	_, _, err = h.e.UpgradeProg(ctx, p.ID, 2, ProgSpec{Program: twice, Acts: []uint64{tagCount}})
	wantRefusal(t, "an upgrade of a retired prog", err, Lifecycle)
	// Revisions survive a restart.
	h.reopen()
	if revs, err := h.e.ProgRevisions(ctx, p.ID); err != nil || len(revs) != 3 {
		t.Fatalf("revisions after a restart: %d %v", len(revs), err)
	}
}

// TestUpgradeOrderedAfterClaim: an upgrade waits for a claimed act call
// to return (it takes the ward guard for writing); the attempt's outcome
// is recorded, and the invocation, stale now, ends with it.
func TestUpgradeOrderedAfterClaim(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	h.bind()
	p := h.install(callOnInput(tagCount), tagCount)
	inv := h.invoke(p, 6)
	h.awaiting(inv)
	tok, err := h.e.Prepare(ctx, inv.ID)
	h.must(err)
	h.count.gate, h.count.entered = make(chan struct{}), make(chan struct{}, 1)
	h.count.set("block")
	dispatched := make(chan error, 1)
	go func() { _, err := h.e.Dispatch(ctx, tok); dispatched <- err }()
	<-h.count.entered
	upgraded := make(chan error, 1)
	go func() {
		_, _, err := h.e.UpgradeProg(ctx, p.ID, 0, ProgSpec{Program: parse(t, callTwice(tagCount)), Acts: []uint64{tagCount}})
		upgraded <- err
	}()
	// While the act runs, the upgrade cannot have happened.
	if cur, err := h.e.Prog(ctx, p.ID); err != nil || cur.Revision != 0 {
		t.Fatalf("the prog moved during a claimed act call: %+v %v", cur, err)
	}
	select {
	case err := <-upgraded:
		t.Fatalf("the upgrade finished while a claimed act ran: %v", err)
	default:
	}
	close(h.count.gate)
	h.must(<-dispatched)
	h.must(<-upgraded)
	h.count.set("")
	if h.claimOf(h.view(inv.ID).Pending, 1) == nil {
		t.Fatal("the dispatched attempt has no claim")
	}
	_, err = h.e.Drive(ctx, inv.ID)
	h.must(err)
	wantStale(t, h, inv.ID, 6)
	wantCalls(t, "one act", h.count, 1)
}

// TestUpgradeKeepsActsAndBounds: an upgrade without acts (nil) keeps the
// current revision's act request, zero bounds keep its bounds, and an
// empty request asks for no act.
func TestUpgradeKeepsActsAndBounds(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount, tagHost)
	p := h.install(callOnInput(tagCount), tagCount)
	up, created, err := h.e.UpgradeProg(ctx, p.ID, 0, ProgSpec{Program: parse(t, callTwice(tagCount))})
	h.must(err)
	if !created || up.Revision != 1 || len(up.Acts) != 1 || up.Acts[0] != tagCount || up.StepLimit != p.StepLimit || up.MaxInFlight != p.MaxInFlight {
		t.Fatalf("an upgrade keeping the acts and bounds: %+v", up)
	}
	again, created, err := h.e.UpgradeProg(ctx, p.ID, 0, ProgSpec{Program: parse(t, callTwice(tagCount))})
	if err != nil || created || again.Revision != 1 {
		t.Fatalf("the same upgrade again: %+v %v %v", again, created, err)
	}
	none, _, err := h.e.UpgradeProg(ctx, p.ID, 1, ProgSpec{Program: parse(t, "[1 7]"), Acts: []uint64{}})
	h.must(err)
	if none.Revision != 2 || len(none.Acts) != 0 {
		t.Fatalf("an upgrade asking for no act: %+v", none)
	}
}
