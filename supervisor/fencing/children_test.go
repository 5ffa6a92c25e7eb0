package fencing

import (
	"slices"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// TestChildInvocations: a child runs its own prog on steps its parent
// delegates, which stay the parent's (used or not); a tree's steps never
// exceed its top-level limit. A child needs the grant to cover its
// parent's prog too. Archive takes a top-level invocation once its whole
// tree ended, and takes the tree.
func TestChildInvocations(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount, tagHost)
	h.bind()
	parentProg := h.install(callOnInput(tagCount), tagCount) // step limit 10,000
	childProg := h.install(callOnInput(tagHost), tagHost)
	parent := h.invoke(parentProg, 1)
	h.awaiting(parent)
	before := h.view(parent.ID).Invocation

	_, err := h.e.InvokeWith(ctx, InvokeSpec{Prog: childProg.ID, Allowance: 5})
	if protocol.AsError(err).Code != protocol.CodeInvalidJob {
		t.Fatalf("an allowance without a parent: %v", err)
	}
	_, err = h.e.InvokeWith(ctx, InvokeSpec{Prog: childProg.ID, Parent: parent.ID, Allowance: 10001})
	if protocol.AsError(err).Code != protocol.CodeInvalidJob {
		t.Fatalf("an allowance over the child prog's step limit: %v", err)
	}
	child, err := h.e.InvokeWith(ctx, InvokeSpec{Prog: childProg.ID, Inputs: []uint64{7}, Parent: parent.ID, Allowance: 500})
	h.must(err)
	if child.Parent != parent.ID || child.Limit != 500 || child.Prog != childProg.ID {
		t.Fatalf("child: %+v", child)
	}
	pv := h.view(parent.ID)
	if pv.Delegated != 500 || pv.Charged != before.Charged || !slices.Equal(pv.Children, []string{child.ID}) {
		t.Fatalf("parent after a child: delegated %d charged %d children %v", pv.Delegated, pv.Charged, pv.Children)
	}
	// All the rest by default: the parent has nothing free after it.
	rest := before.Limit - before.Charged - 500
	greedy, err := h.e.InvokeWith(ctx, InvokeSpec{Prog: childProg.ID, Inputs: []uint64{8}, Parent: parent.ID})
	h.must(err)
	if greedy.Limit != rest {
		t.Fatalf("a default allowance of %d, want the %d free", greedy.Limit, rest)
	}
	_, err = h.e.InvokeWith(ctx, InvokeSpec{Prog: childProg.ID, Parent: parent.ID, Allowance: 1})
	wantRefusal(t, "a child of a parent with nothing free", err, Budget)

	done, err := h.e.Drive(ctx, child.ID)
	h.must(err)
	if done.Status != store.InvocationCompleted || atomOf(t, done.Result) != 7 || done.Charged == 0 || done.Charged > 500 {
		t.Fatalf("child: %s charged %d: %v", done.Status, done.Charged, done.Error)
	}
	// The parent's act needs its own steps: none are free, so its next
	// slice ends it for its budget; delegated steps never come back.
	if _, err := h.e.Dispatch(ctx, mustPrepare(t, h, parent.ID)); err != nil {
		t.Fatal(err)
	}
	ended, err := h.e.Drive(ctx, parent.ID)
	h.must(err)
	if ended.Status != store.InvocationFailed || ended.Error.Code != protocol.CodeBudgetExhausted {
		t.Fatalf("parent with all its steps delegated: %s %v", ended.Status, ended.Error)
	}
	if ended.Charged+ended.Delegated != ended.Limit {
		t.Fatalf("parent: charged %d + delegated %d, limit %d", ended.Charged, ended.Delegated, ended.Limit)
	}

	err = h.e.Archive(ctx, child.ID)
	wantRefusal(t, "archive of a child", err, Lifecycle)
	err = h.e.Archive(ctx, parent.ID)
	wantRefusal(t, "archive of a tree with a live child", err, Lifecycle)
	if _, err := h.e.Drive(ctx, greedy.ID); err != nil {
		t.Fatal(err)
	}
	h.must(h.e.Archive(ctx, parent.ID))
	for _, id := range []string{parent.ID, child.ID, greedy.ID} {
		if v := h.view(id); !v.Archived {
			t.Fatalf("%s is not archived with its tree", id)
		}
	}
	rep, err := h.st.Check(ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("store check: %v %v", err, rep.Problems)
	}
}

// TestChildRefusals: a parent that holds its steps in a running slice is
// busy; a parent of an older epoch, an ended one, or one whose prog the
// grant does not cover has no children.
func TestChildRefusals(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount, tagHost)
	h.bind()
	parentProg := h.install(callOnInput(tagCount), tagCount)
	childProg := h.install(callOnInput(tagHost), tagHost)
	parent := h.invoke(parentProg, 1)
	h.must(h.e.write(ctx, func(tx store.FencingTx) error { _, err := h.e.reserve(tx, parent.ID); return err }))
	_, err := h.e.InvokeWith(ctx, InvokeSpec{Prog: childProg.ID, Parent: parent.ID})
	wantRefusal(t, "a child while the parent's slice holds its steps", err, Busy)
	if _, err := h.e.RecoverReservation(ctx, parent.ID); err != nil {
		t.Fatal(err)
	}
	_, err = h.e.InvokeWith(ctx, InvokeSpec{Prog: childProg.ID, Parent: parent.ID, Allowance: parent.Limit})
	wantRefusal(t, "a child on more steps than the parent has free", err, Budget)

	other := h.invoke(parentProg, 2)
	g, err := h.e.Grant(ctx)
	h.must(err)
	_, err = h.e.SetGrant(ctx, g.Revision, GrantSpec{Acts: []uint64{tagCount, tagHost}, Progs: []string{childProg.ID}})
	h.must(err)
	_, err = h.e.InvokeWith(ctx, InvokeSpec{Prog: childProg.ID, Parent: other.ID, Allowance: 10})
	wantRefusal(t, "a child of a prog the grant does not cover", err, Denied)
	h.grant(tagCount, tagHost)

	r, err := h.e.Root(ctx)
	h.must(err)
	_, err = h.e.ChangePolicy(ctx, r.Policy, r.Epoch+1)
	h.must(err)
	h.grant(tagCount, tagHost)
	_, err = h.e.InvokeWith(ctx, InvokeSpec{Prog: childProg.ID, Parent: other.ID, Allowance: 10})
	wantRefusal(t, "a child of a parent of an older epoch", err, Denied)
	if _, err := h.e.Rebind(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Cancel(ctx, other.ID, ""); err != nil {
		t.Fatal(err)
	}
	_, err = h.e.InvokeWith(ctx, InvokeSpec{Prog: childProg.ID, Parent: other.ID, Allowance: 10})
	wantRefusal(t, "a child of an ended parent", err, Lifecycle)
}

func mustPrepare(t *testing.T, h *harness, inv string) DispatchToken {
	t.Helper()
	tok, err := h.e.Prepare(ctx, inv)
	h.must(err)
	return tok
}
