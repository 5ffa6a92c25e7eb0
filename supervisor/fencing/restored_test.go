package fencing

import (
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// fence does what the start of a restored store does to its fencing
// records (the supervisor's restore.go): Meta.Fence over every
// invocation it holds, the invocation seqs moved on, and FenceRestored.
func (h *harness) fence() FenceReport {
	h.t.Helper()
	var rep FenceReport
	h.must(h.st.Local().Update(ctx, func(tx store.LocalTx) error {
		rt := tx.(bolt.RestoreTx)
		m, err := tx.Meta()
		if err != nil {
			return err
		}
		m.Fence = &store.RestoreFence{At: time.Now().UTC(), Restores: 1, Invocations: rt.InvocationSeq(), Reason: "test"}
		if err := tx.PutMeta(m); err != nil {
			return err
		}
		if err := rt.SkipInvocationSeqs(rt.InvocationSeq() + 1<<20); err != nil {
			return err
		}
		rep, err = h.e.FenceRestored(tx)
		return err
	}))
	return rep
}

// TestRestoredInvocationsNeverActByThemselves: after a fence, an
// invocation the restored store held never dispatches its act again:
// the operation it waited on at the backup, and every one it proposes
// after a reconcile, is recorded attempted by a restored attempt (no
// claim), which Drive, Prepare and cancel answer as unknown outcome and
// only a reconcile resolves. An invocation made after the fence is
// dispatched as before, under an id no earlier invocation had. Before
// the fence existed the same drives called the act (the restored store
// had forgotten that it ran).
func TestRestoredInvocationsNeverActByThemselves(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	h.bind()
	p := h.install(callTwice(tagCount), tagCount)
	waiting := h.invoke(p, 1) // proposed at the backup
	op1 := h.awaiting(waiting)
	fresh := h.invoke(p, 2) // not run yet at the backup
	lastSeq := fresh.Seq

	rep := h.fence()
	if rep.Fenced != 2 || rep.Unknown != 1 {
		t.Fatalf("fence report %+v, want 2 fenced, 1 unknown", rep)
	}
	h.reopen()
	h.bind()
	for _, id := range []string{waiting.ID, fresh.ID} {
		_, err := h.e.Drive(ctx, id)
		wantRefusal(t, "drive of a fenced invocation", err, UnknownOutcome)
	}
	wantCalls(t, "fenced drives", h.count, 0)
	_, err := h.e.Prepare(ctx, waiting.ID)
	wantRefusal(t, "prepare of a fenced operation", err, UnknownOutcome)
	_, err = h.e.Cancel(ctx, waiting.ID, "x")
	wantRefusal(t, "cancel with a restored attempt", err, UnknownOutcome)
	v := h.view(waiting.ID)
	a := v.Operations[0].Attempts[0]
	if v.Operations[0].ID != op1.ID || a.Executor != store.ExecutorRestored || a.Claim != nil || !a.Unknown {
		t.Fatalf("the waiting operation after the fence: %+v", v.Operations[0])
	}

	// The owner reconciles: the invocation goes on to its next
	// operation, which is unknown as well; a second reconcile ends it.
	for _, id := range []string{waiting.ID, fresh.ID} {
		for round := range 2 {
			v := h.view(id)
			op := v.Operations[len(v.Operations)-1]
			if n := len(op.Attempts); n != 1 || op.Attempts[0].Executor != store.ExecutorRestored {
				t.Fatalf("%s round %d: %+v", id, round, op)
			}
			if _, _, err := h.e.Reconcile(ctx, op.ID, 1, OutcomeSpec{Value: noun.Atom(uint64(10 + round))}); err != nil {
				t.Fatal(err)
			}
			got, err := h.e.Drive(ctx, id)
			if round == 0 {
				wantRefusal(t, "the next operation of a fenced invocation", err, UnknownOutcome)
				continue
			}
			h.must(err)
			if got.Status != store.InvocationCompleted || len(got.Output) != 2 || got.Output[0] != 10 || got.Output[1] != 11 {
				t.Fatalf("%s: %s %v %v", id, got.Status, got.Output, got.Error)
			}
		}
	}
	wantCalls(t, "reconciled invocations", h.count, 0)

	// Made after the fence: dispatched, its seq past every earlier one.
	later := h.invoke(p, 3)
	if later.Seq <= lastSeq+1<<20 {
		t.Fatalf("an invocation after the fence has seq %d", later.Seq)
	}
	got, err := h.e.Drive(ctx, later.ID)
	h.must(err)
	if got.Status != store.InvocationCompleted {
		t.Fatalf("the invocation after the fence: %s %v", got.Status, got.Error)
	}
	wantCalls(t, "an invocation after the fence", h.count, 2)
}
