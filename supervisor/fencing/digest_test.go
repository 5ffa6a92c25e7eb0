package fencing

import (
	"testing"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// TestInvocationDigest: the digest counts every invocation by status and
// every operation, keeps only the newest few invocations (newest first)
// and at most maxUnknown of the operations with an unknown attempt,
// counting the others: what the dashboard's fencing page holds is
// bounded whatever the store has.
func TestInvocationDigest(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	h.bind()
	p := h.install(callOnInput(tagCount), tagCount)
	var invs []*store.Invocation
	for i := range 9 {
		invs = append(invs, h.invoke(p, uint64(i+1)))
	}
	// Three completed, three taken by hand (each attempt unknown until
	// reconciled), three invoked and not driven.
	for _, inv := range invs[:3] {
		if got, err := h.e.Drive(ctx, inv.ID); err != nil || got.Status != store.InvocationCompleted {
			t.Fatalf("drive %s: %+v %v", inv.ID, got, err)
		}
	}
	for _, inv := range invs[3:6] {
		h.awaiting(inv)
		if _, err := h.e.Take(ctx, inv.ID); err != nil {
			t.Fatal(err)
		}
	}
	all, err := h.e.Invocations(ctx)
	h.must(err)
	want := map[store.InvocationStatus]int{}
	for _, inv := range all {
		want[inv.Status]++
	}
	ops, err := h.e.Operations(ctx, "")
	h.must(err)

	d, err := h.e.InvocationDigest(ctx, 4, 2)
	h.must(err)
	if d.Invocations != 9 || len(d.ByStatus) != len(want) {
		t.Fatalf("digest of %d invocations by status %v, want 9 by %v", d.Invocations, d.ByStatus, want)
	}
	for s, n := range want {
		if d.ByStatus[s] != n {
			t.Fatalf("status %s: %d, want %d", s, d.ByStatus[s], n)
		}
	}
	if len(d.Newest) != 4 {
		t.Fatalf("%d newest, want 4", len(d.Newest))
	}
	for i, inv := range d.Newest {
		if inv.ID != invs[8-i].ID {
			t.Fatalf("newest[%d] is %s (seq %d), want %s", i, inv.ID, inv.Seq, invs[8-i].ID)
		}
	}
	if d.Operations != len(ops) || len(d.Unknown) != 2 || d.UnknownMore != 1 {
		t.Fatalf("%d operations (want %d), %d unknown kept and %d more (want 2 and 1)", d.Operations, len(ops), len(d.Unknown), d.UnknownMore)
	}
	for _, v := range d.Unknown {
		if len(v.Attempts) == 0 || !v.Attempts[len(v.Attempts)-1].Unknown {
			t.Fatalf("operation %s kept as unknown: %+v", v.ID, v.Attempts)
		}
	}
	// Asked for more than there are: all of them.
	d, err = h.e.InvocationDigest(ctx, 50, 100)
	h.must(err)
	if len(d.Newest) != 9 || len(d.Unknown) != 3 || d.UnknownMore != 0 {
		t.Fatalf("digest (50, 100): %d newest, %d unknown, %d more", len(d.Newest), len(d.Unknown), d.UnknownMore)
	}
}
