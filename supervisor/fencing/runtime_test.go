package fencing

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func (h *harness) drive(inv *store.Invocation) *store.Invocation {
	h.t.Helper()
	got, err := h.e.Drive(ctx, inv.ID)
	h.must(err)
	return got
}

// TestEmitTwice: a prog that emits twice writes two lines, one per
// operation, and gets their line numbers as witnesses.
func TestEmitTwice(t *testing.T) {
	h := newHarness(t)
	h.grant(hostact.TagEmit)
	h.bind()
	p := h.install(callTwice(hostact.TagEmit), hostact.TagEmit)
	a, b := h.invoke(p, 5), h.invoke(p, 6)
	for _, inv := range []*store.Invocation{a, b} {
		got := h.drive(inv)
		if got.Status != store.InvocationCompleted || len(got.Output) != 2 {
			t.Fatalf("%s: %s %v %v", inv.ID, got.Status, got.Error, got.Output)
		}
	}
	lines, err := hostact.ReadEmitLog(h.emitter.Path())
	h.must(err)
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4", len(lines))
	}
	ops := map[string]bool{}
	for i, l := range lines {
		if ops[l.Operation] {
			t.Fatalf("operation %s emitted twice", l.Operation)
		}
		ops[l.Operation] = true
		if l.Attempt != "1" || l.Generation != "1" || l.Prog != p.ID {
			t.Fatalf("line %d: %+v", i+1, l)
		}
	}
	// The witnesses are the line numbers, in order per invocation.
	got, _ := h.e.Invocation(ctx, b.ID)
	if got.Output[0] != 3 || got.Output[1] != 4 || lines[2].Argument != "[6 0]" {
		t.Fatalf("output %v, line 3 %+v", got.Output, lines[2])
	}
	// Reopened, the emitter counts on.
	em, err := hostact.OpenEmitter(hostact.EffectsDir(h.home))
	h.must(err)
	defer em.Close()
	if em.Lines() != 4 {
		t.Fatalf("reopened at %d lines", em.Lines())
	}
}

// TestStepsAreChargedOnce: whatever the reservation size, a completed
// invocation is charged exactly the VM steps of its run: a replayed
// prefix is never charged twice, and nothing is refunded.
func TestStepsAreChargedOnce(t *testing.T) {
	var want uint64
	for _, r := range []uint64{1000, 7, 3, 1} {
		h := newHarness(t)
		h.reservation = r
		h.e = h.engine("boot-r")
		h.grant(tagHost)
		h.bind()
		p := h.install(callTwice(tagHost), tagHost)
		got := h.drive(h.invoke(p, 9))
		if got.Status != store.InvocationCompleted {
			t.Fatalf("reservation %d: %s %v", r, got.Status, got.Error)
		}
		if want == 0 {
			want = got.Charged
		}
		if got.Charged != want || got.Held != 0 {
			t.Fatalf("reservation %d: charged %d held %d, want %d", r, got.Charged, got.Held, want)
		}
	}
}

// TestCrashedReservationIsChargedItsReplay: a reservation left open by
// a crash is charged, before anything else runs for the invocation,
// what its slice could have used: the steps a replay of it takes to its
// act or end (the program is deterministic). Replayed steps cost no new
// charge, so the invocation goes on and ends charged as one that never
// crashed. Before, the reservation (a slice reserves all the steps the
// invocation has left) was charged in full and every invocation a
// crash caught in a slice, or between an act's outcome and the next
// slice, failed budget_exhausted. A reservation of a replay that
// crashed too is charged in full: no program makes a crash loop.
func TestCrashedReservationIsChargedItsReplay(t *testing.T) {
	h := newHarness(t)
	h.grant(tagHost)
	h.bind()
	p := h.install(callOnInput(tagHost), tagHost)
	calm := h.drive(h.invoke(p, 1)) // the same run without a crash
	if calm.Status != store.InvocationCompleted {
		t.Fatalf("without a crash: %s %v", calm.Status, calm.Error)
	}
	inv := h.invoke(p, 1)
	h.must(h.e.write(ctx, func(tx store.FencingTx) error { _, err := h.e.reserve(tx, inv.ID); return err }))
	h.reopen()
	h.bind()
	v := h.view(inv.ID)
	if v.Reservation == nil || v.Held != v.Limit {
		t.Fatalf("the open reservation holds %d of %d steps: %+v", v.Held, v.Limit, v.Invocation)
	}
	_, err := h.e.Rebind(ctx, inv.ID)
	wantRefusal(t, "rebind with an open reservation", err, Busy)
	ok, err := h.e.RecoverReservation(ctx, inv.ID)
	h.must(err)
	if !ok {
		t.Fatal("nothing recovered")
	}
	v = h.view(inv.ID)
	if v.Charged == 0 || v.Charged >= v.Limit || v.Held != 0 || v.Reservation != nil {
		t.Fatalf("after recovery: charged %d held %d of %d", v.Charged, v.Held, v.Limit)
	}
	got := h.drive(inv)
	if got.Status != store.InvocationCompleted || got.Charged != calm.Charged {
		t.Fatalf("after recovery: %s %v charged %d, %d without the crash", got.Status, got.Error, got.Charged, calm.Charged)
	}
	// A crash in the slice after an act: Drive recovers the reservation
	// by itself, first, and the act is not called again.
	p2 := h.install(callTwice(tagHost), tagHost)
	inv2 := h.invoke(p2, 2)
	h.awaiting(inv2)
	tok, err := h.e.Prepare(ctx, inv2.ID)
	h.must(err)
	res, err := h.e.Dispatch(ctx, tok)
	h.must(err)
	if res.Outcome == nil {
		t.Fatalf("dispatch: %+v", res)
	}
	hosts := h.host.Load()
	h.must(h.e.write(ctx, func(tx store.FencingTx) error { _, err := h.e.reserve(tx, inv2.ID); return err }))
	h.reopen()
	h.bind()
	got = h.drive(inv2)
	if got.Status != store.InvocationCompleted || got.Pending != "" || got.Held != 0 {
		t.Fatalf("drive after a crashed slice: %s %v charged %d output %v", got.Status, got.Error, got.Charged, got.Output)
	}
	if n := h.host.Load() - hosts; n != 1 {
		t.Fatalf("host ran %d times after the crash, want 1 (the second act only)", n)
	}
	// A reservation whose replay crashed: charged in full.
	inv3 := h.invoke(p, 3)
	crashed := h.engine("boot-crashed" + replayMark)
	h.must(crashed.write(ctx, func(tx store.FencingTx) error { _, err := crashed.reserve(tx, inv3.ID); return err }))
	h.reopen()
	h.bind()
	got = h.drive(inv3)
	if got.Status != store.InvocationFailed || got.Error.Code != protocol.CodeBudgetExhausted || got.Charged != got.Limit {
		t.Fatalf("after a crashed replay: %s %v charged %d of %d", got.Status, got.Error, got.Charged, got.Limit)
	}
}

// TestCappedReservationCrash: an engine that caps slices (here at 1,000
// steps) charges a crashed slice at most the cap, and the invocation
// goes on.
func TestCappedReservationCrash(t *testing.T) {
	const capSteps = 1000
	h := newHarness(t)
	h.reservation = capSteps
	h.e = h.engine("boot-capped")
	h.grant(tagHost)
	h.bind()
	p := h.install(callOnInput(tagHost), tagHost)
	inv := h.invoke(p, 1)
	h.must(h.e.write(ctx, func(tx store.FencingTx) error { _, err := h.e.reserve(tx, inv.ID); return err }))
	h.reopen()
	h.bind()
	v := h.view(inv.ID)
	if v.Reservation == nil || v.Held != capSteps {
		t.Fatalf("no open reservation after the crash: %+v", v.Invocation)
	}
	ok, err := h.e.RecoverReservation(ctx, inv.ID)
	h.must(err)
	if !ok {
		t.Fatal("nothing recovered")
	}
	v = h.view(inv.ID)
	if v.Charged == 0 || v.Charged > capSteps || v.Held != 0 || v.Reservation != nil {
		t.Fatalf("after recovery: charged %d held %d", v.Charged, v.Held)
	}
	got := h.drive(inv)
	if got.Status != store.InvocationCompleted || got.Charged < v.Charged || got.Charged > got.Limit {
		t.Fatalf("after recovery: %s charged %d", got.Status, got.Charged)
	}
	inv2 := h.invoke(p, 2)
	h.must(h.e.write(ctx, func(tx store.FencingTx) error { _, err := h.e.reserve(tx, inv2.ID); return err }))
	h.reopen()
	h.bind()
	got = h.drive(inv2)
	if got.Status != store.InvocationCompleted || got.Charged == 0 || got.Charged > capSteps {
		t.Fatalf("drive after a crashed slice: %s charged %d", got.Status, got.Charged)
	}
}

// TestStepLimit: an invocation whose program needs more steps than its
// limit fails with budget_exhausted, charged exactly the limit.
func TestStepLimit(t *testing.T) {
	h := newHarness(t)
	h.grant(tagHost)
	h.bind()
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, callTwice(tagHost)), Acts: []uint64{tagHost}, StepLimit: 4})
	h.must(err)
	got := h.drive(h.invoke(p, 1))
	if got.Status != store.InvocationFailed || got.Error.Code != protocol.CodeBudgetExhausted || got.Charged+got.Held > 4 {
		t.Fatalf("%s %v charged %d", got.Status, got.Error, got.Charged)
	}
}

// TestOutcomesBecomeWitnesses: a failed act halts the program (the call
// has no witness) and fails the invocation; a witness the check formula
// rejects is CallRejected; look is refused.
func TestOutcomesBecomeWitnesses(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	h.bind()
	p := h.install(callOnInput(tagCount), tagCount)
	h.count.set("fail")
	got := h.drive(h.invoke(p, 1))
	if got.Status != store.InvocationFailed || got.Error.Code != protocol.CodeExecutionFailed {
		t.Fatalf("a failed act: %s %v", got.Status, got.Error)
	}
	h.count.set("")
	// The check formula [5 [[0 2] [1 1]]] is witness + 1: 0 only for
	// p-1, so the witness 7 is rejected.
	strict := h.install(fmt.Sprintf("[2 [[0 2] [1 [16 [[1 %d] [5 [[0 2] [1 1]]]]]]]]", uint64(tagCount)), tagCount)
	got = h.drive(h.invoke(strict, 7))
	if got.Status != store.InvocationFailed || got.Error.Message != "nox error CallRejected" {
		t.Fatalf("a rejected witness: %s %v", got.Status, got.Error)
	}
	// look is not offered in the host-act environment.
	look := h.install("[17 [[1 0] [1 0]]]")
	got = h.drive(h.invoke(look))
	if got.Status != store.InvocationFailed || got.Error.Code != protocol.CodeUnsupportedState {
		t.Fatalf("look: %s %v", got.Status, got.Error)
	}
}

// TestTamperedOperationIsRefused: an operation altered in the store
// without the vault (sealed again, which anyone can do) fails its
// authentication tag, and nothing reads it: the dispatch is refused and
// names the record. One altered with a valid tag (only the vault's
// holder can make one: a bug of the supervisor's own) no longer matches
// the digest its signed attempt binds: the dispatch and the replay
// refuse it all the same.
func TestTamperedOperationIsRefused(t *testing.T) {
	h := newHarness(t)
	h.grant(tagHost)
	h.bind()
	p := h.install(callTwice(tagHost), tagHost)
	inv := h.invoke(p, 1)
	op := h.awaiting(inv)
	tok, err := h.e.Prepare(ctx, inv.ID)
	h.must(err)
	// Rewrite the stored argument and a permit's copy alike.
	forged := tok.Metadata()
	forged.Arguments = noun.AppendTokens(nil, noun.Cons(noun.Atom(2), noun.Atom(0)))
	h.rewriteOperation(op.ID, forged.Arguments, false)
	_, err = h.e.dispatch(ctx, forged)
	if protocol.CodeOf(err) != protocol.CodeInternalError || !strings.Contains(err.Error(), store.RecordName([]byte("operations"), []byte(op.ID))) ||
		!strings.Contains(err.Error(), store.ErrUnauthenticated.Error()) {
		t.Fatalf("dispatch of an operation altered without the vault: %v", err)
	}
	h.rewriteOperation(op.ID, forged.Arguments, true)
	_, err = h.e.dispatch(ctx, forged)
	wantRefusal(t, "dispatch of a tampered operation", err, Conflict)
	if n := h.host.Load(); n != 0 {
		t.Fatalf("host ran %d times", n)
	}
	// Reconciled, the tampered operation is refused by the replay too.
	_, _, err = h.e.Reconcile(ctx, op.ID, 1, OutcomeSpec{Value: noun.Atom(3)})
	h.must(err)
	_, err = h.e.Drive(ctx, inv.ID)
	wantRefusal(t, "replay of a tampered operation", err, Conflict)
}

func TestProgLifecycleAndBounds(t *testing.T) {
	h := newHarness(t)
	h.grant(tagHost)
	h.bind()
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, callOnInput(tagHost)), Acts: []uint64{tagHost}, MaxInFlight: 2})
	h.must(err)
	again, created, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, callOnInput(tagHost)), Acts: []uint64{tagHost}, MaxInFlight: 2})
	if err != nil || created || again.ID != p.ID {
		t.Fatalf("installing the same prog again: %v %v", created, err)
	}
	_, _, err = h.e.InstallProg(ctx, ProgSpec{Program: parse(t, callOnInput(tagHost)), Acts: []uint64{tagHost}, MaxInFlight: 3})
	wantRefusal(t, "the same program with other settings", err, Conflict)
	_, _, err = h.e.InstallProg(ctx, ProgSpec{Program: parse(t, "[1 1]"), Acts: []uint64{tagCount}})
	wantRefusal(t, "a prog requesting an act not granted", err, Denied)
	_, _, err = h.e.InstallProg(ctx, ProgSpec{Program: parse(t, "[1 1]"), Acts: []uint64{0x1234}})
	wantRefusal(t, "a prog requesting an act not registered", err, Unsupported)
	a, b := h.invoke(p, 1), h.invoke(p, 2)
	_, err = h.e.Invoke(ctx, p.ID, []uint64{3})
	wantRefusal(t, "beyond max in flight", err, Busy)
	_, err = h.e.Invoke(ctx, p.ID, []uint64{^uint64(0)})
	if protocol.CodeOf(err) != protocol.CodeInvalidJob {
		t.Fatalf("a non-canonical input: %v", err)
	}
	_, err = h.e.RetireProg(ctx, p.ID)
	wantRefusal(t, "retire with live invocations", err, Busy)
	_, err = h.e.PauseProg(ctx, p.ID)
	h.must(err)
	_, err = h.e.Drive(ctx, a.ID)
	wantRefusal(t, "drive a paused prog's invocation", err, Lifecycle)
	_, err = h.e.Invoke(ctx, p.ID, nil)
	wantRefusal(t, "invoke a paused prog", err, Lifecycle)
	_, err = h.e.ResumeProg(ctx, p.ID)
	h.must(err)
	h.drive(a)
	h.drive(b)
	got, err := h.e.RetireProg(ctx, p.ID)
	h.must(err)
	if got.State != store.ProgRetired {
		t.Fatalf("retired prog is %s", got.State)
	}
	_, err = h.e.Invoke(ctx, p.ID, nil)
	wantRefusal(t, "invoke a retired prog", err, Lifecycle)
}

// TestArgumentBound: an act whose argument exceeds the worker's bound is
// denied at prepare, and the act never runs.
func TestArgumentBound(t *testing.T) {
	h := newHarness(t)
	e, err := New(Config{Store: h.st.Fencing(), Trust: h.st.Trust(), Vault: h.e.vault, Acts: h.acts, Boot: "small", MaxArgumentBytes: 16})
	h.must(err)
	h.e = e
	h.grant(tagCount)
	h.bind()
	p := h.install(callTwice(tagCount), tagCount) // the argument is the subject [8 [7 0]]: 29 bytes
	inv := h.invoke(p, 7, 8)
	h.awaiting(inv)
	_, err = h.e.Prepare(ctx, inv.ID)
	wantRefusal(t, "an argument over the bound", err, Denied)
	wantCalls(t, "an argument over the bound", h.count, 0)
}
