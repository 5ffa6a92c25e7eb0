package fencing

import (
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// TestCancelTakesTheTree: cancelling an invocation cancels every live
// invocation below it in the same transaction, all or none: an unknown
// attempt anywhere in the tree refuses the whole cancel (nothing ends,
// nothing is consumed); a retained outcome below is consumed without an
// effect; an ended child stays as it ended, and its own live children
// are cancelled through it. Delegated steps are not given back.
func TestCancelTakesTheTree(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount, tagHost)
	h.bind()
	pp := h.install(callOnInput(tagCount), tagCount)
	cp := h.install(callOnInput(tagHost), tagHost)
	parent := h.invoke(pp, 1)
	h.awaiting(parent)
	spawn := func(of *store.Invocation, input, steps uint64) *store.Invocation {
		t.Helper()
		c, err := h.e.InvokeWith(ctx, InvokeSpec{Prog: cp.ID, Inputs: []uint64{input}, Parent: of.ID, Allowance: steps})
		h.must(err)
		return c
	}
	ended, waiting, taken := spawn(parent, 2, 2000), spawn(parent, 3, 1000), spawn(parent, 4, 1000)
	grand := spawn(ended, 5, 1000) // a grandchild under a child that will have ended
	done, err := h.e.Drive(ctx, ended.ID)
	h.must(err)
	if done.Status != store.InvocationCompleted {
		t.Fatalf("child: %s %v", done.Status, done.Error)
	}
	h.awaiting(waiting)
	h.awaiting(grand)
	h.awaiting(taken)
	at, err := h.e.Take(ctx, taken.ID)
	h.must(err)

	_, err = h.e.Cancel(ctx, parent.ID, "")
	wantRefusal(t, "cancelling a tree with an unknown attempt", err, UnknownOutcome)
	for _, id := range []string{parent.ID, waiting.ID, taken.ID, grand.ID} {
		if v := h.view(id); v.Status.Terminal() || v.Pending == "" {
			t.Fatalf("a refused cancel changed invocation %s: %s, pending %q", id, v.Status, v.Pending)
		}
	}
	before := h.view(parent.ID)
	_, _, err = h.e.Reconcile(ctx, at.Operation, at.N, OutcomeSpec{Value: noun.Atom(4)})
	h.must(err)
	out, err := h.e.Cancel(ctx, parent.ID, "done with it")
	h.must(err)
	if out.ID != parent.ID || out.Status != store.InvocationCancelled || out.Error.Message != "cancelled: done with it" {
		t.Fatalf("the parent: %+v", out)
	}
	for _, id := range []string{waiting.ID, taken.ID, grand.ID} {
		v := h.view(id)
		if v.Status != store.InvocationCancelled || v.Pending != "" || !strings.Contains(v.Error.Message, "with invocation "+parent.ID) {
			t.Fatalf("invocation %s below the cancelled one: %s, pending %q, %v", id, v.Status, v.Pending, v.Error)
		}
	}
	if v := h.view(ended.ID); v.Status != store.InvocationCompleted {
		t.Fatalf("an ended child became %s", v.Status)
	}
	if v := h.view(parent.ID); v.Delegated != before.Delegated || v.Charged != before.Charged {
		t.Fatalf("the parent's steps moved: delegated %d→%d, charged %d→%d", before.Delegated, v.Delegated, before.Charged, v.Charged)
	}
	_, err = h.e.Cancel(ctx, waiting.ID, "")
	wantRefusal(t, "cancelling an ended child", err, Lifecycle)
	wantCalls(t, "no act ran for the cancel", h.count, 0)
	h.must(h.e.Archive(ctx, parent.ID))
}
