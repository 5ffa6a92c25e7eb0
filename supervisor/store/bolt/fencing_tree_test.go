package bolt

import (
	"context"
	"errors"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// next is p's next revision running program src.
func (f *fx) next(p *store.Prog, src string) *store.Prog {
	f.t.Helper()
	n, err := noun.Parse(src)
	f.must(err)
	np := *p
	np.Revision++
	np.Program, np.Particle = noun.AppendTokens(nil, n), neuron.Particle(n.Particle())
	np.StepLimit = 50
	return &np
}

// TestProgUpgradeKeepsRevisions: an upgrade is the next revision of the
// same prog, keeps the one it replaces, and never applies to a retiring
// or retired prog; invocations pin the revision they started at.
func TestProgUpgradeKeepsRevisions(t *testing.T) {
	f := newFx(t)
	p, inv := f.setup()
	upgrade := func(np *store.Prog) error {
		return f.update(func(tx store.LocalTx) error { return tx.UpgradeProg(np) })
	}
	np := f.next(p, "[1 42]")
	skip := *np
	skip.Revision = 2
	wantErr(t, "a revision that skips one", upgrade(&skip), store.ErrConflict)
	bad := *np
	bad.Particle = neuron.Particle{9}
	wantErr(t, "a particle that is not the program's", upgrade(&bad), store.ErrInvariant)
	paused := *np
	paused.State = store.ProgPaused
	wantErr(t, "an upgrade that moves the lifecycle", upgrade(&paused), store.ErrInvariant)
	f.must(upgrade(np))
	wantErr(t, "the same revision again", upgrade(np), store.ErrConflict)
	_ = f.s.Local().View(context.Background(), func(tx store.LocalTx) error {
		cur, err := tx.Prog(p.ID)
		if err != nil || cur.Revision != 1 || cur.Particle != np.Particle || cur.StepLimit != 50 {
			t.Fatalf("current: %+v %v", cur, err)
		}
		old, err := tx.ProgRevision(p.ID, 0)
		if err != nil || old.Revision != 0 || old.Particle != p.Particle || old.StepLimit != 100 {
			t.Fatalf("revision 0: %+v %v", old, err)
		}
		if _, err := tx.ProgRevision(p.ID, 2); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("revision 2: %v", err)
		}
		if i, _ := tx.Invocation(inv.ID); i.ProgRevision != 0 {
			t.Fatalf("the live invocation moved to revision %d", i.ProgRevision)
		}
		return nil
	})
	wantErr(t, "an invocation of the replaced revision", f.update(func(tx store.LocalTx) error {
		return tx.CreateInvocation(&store.Invocation{Neuron: inv.Neuron, Network: inv.Network, Prog: p.ID, Limit: 100, Epoch: 1,
			Status: store.InvocationRunning, Created: f.now})
	}), store.ErrInvariant)
	f.must(f.update(func(tx store.LocalTx) error {
		return tx.CreateInvocation(&store.Invocation{Neuron: inv.Neuron, Network: inv.Network, Prog: p.ID, ProgRevision: 1, Limit: 50,
			Epoch: 1, Status: store.InvocationRunning, Created: f.now})
	}))
	rep, err := f.s.Check(context.Background())
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check after an upgrade: %+v %v", rep, err)
	}
	// A retired prog is not upgraded.
	f.must(f.update(func(tx store.LocalTx) error {
		var ids []string
		_ = tx.ForEachInvocation(func(i *store.Invocation) bool { ids = append(ids, i.ID); return true })
		for _, id := range ids {
			i, _ := tx.Invocation(id)
			i.Status, i.Error = store.InvocationCancelled, protocol.Errorf(protocol.CodeCancelled, "x")
			if err := tx.PutInvocation(i); err != nil {
				return err
			}
		}
		cur, _ := tx.Prog(p.ID)
		cur.State = store.ProgRetiring
		return tx.PutProg(cur)
	}))
	cur := f.next(np, "[1 43]")
	cur.State = store.ProgRetiring
	wantErr(t, "upgrading a retiring prog", upgrade(cur), store.ErrInvariant)
}

// TestChildrenRunOnDelegatedSteps: a child's allowance comes out of its
// parent's free steps and stays delegated; archive takes only a
// top-level invocation whose whole tree ended, and takes the tree.
func TestChildrenRunOnDelegatedSteps(t *testing.T) {
	f := newFx(t)
	p, parent := f.setup() // limit 100, max in flight 4
	child := func(limit uint64, of string) (*store.Invocation, error) {
		c := &store.Invocation{Neuron: parent.Neuron, Network: parent.Network, Prog: p.ID, Parent: of, Limit: limit, Epoch: 1,
			Status: store.InvocationRunning, Created: f.now}
		return c, f.update(func(tx store.LocalTx) error { return tx.CreateInvocation(c) })
	}
	_, err := child(101, parent.ID)
	wantErr(t, "an allowance over the prog's step limit", err, store.ErrInvariant)
	f.must(f.update(func(tx store.LocalTx) error {
		return tx.Reserve(&store.Reservation{Invocation: parent.ID, Steps: 70, Boot: "b1", Created: f.now})
	}))
	_, err = child(40, parent.ID)
	wantErr(t, "an allowance over the free steps", err, store.ErrInvariant)
	c1, err := child(30, parent.ID)
	f.must(err)
	wantErr(t, "a second reservation", f.update(func(tx store.LocalTx) error {
		return tx.Reserve(&store.Reservation{Invocation: parent.ID, Steps: 1, Boot: "b1", Created: f.now})
	}), store.ErrInvariant)
	f.must(f.update(func(tx store.LocalTx) error { return tx.Charge(parent.ID, 70) }))
	wantErr(t, "a reservation of delegated steps", f.update(func(tx store.LocalTx) error {
		return tx.Reserve(&store.Reservation{Invocation: parent.ID, Steps: 1, Base: 70, Boot: "b1", Created: f.now})
	}), store.ErrInvariant)
	grand, err := child(10, c1.ID)
	f.must(err)
	_ = f.s.Local().View(context.Background(), func(tx store.LocalTx) error {
		par, _ := tx.Invocation(parent.ID)
		c, _ := tx.Invocation(c1.ID)
		kids, _ := tx.Children(parent.ID)
		if par.Delegated != 30 || par.Charged != 70 || c.Delegated != 10 || len(kids) != 1 || kids[0] != c1.ID {
			t.Fatalf("parent %+v child %+v children %v", par, c, kids)
		}
		return nil
	})
	rep, err := f.s.Check(context.Background())
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check of a tree: %+v %v", rep, err)
	}
	end := func(id string) {
		f.must(f.update(func(tx store.LocalTx) error {
			i, _ := tx.Invocation(id)
			i.Status, i.Error = store.InvocationCancelled, protocol.Errorf(protocol.CodeCancelled, "x")
			return tx.PutInvocation(i)
		}))
	}
	archive := func(id string) error {
		return f.update(func(tx store.LocalTx) error { return tx.ArchiveInvocation(id) })
	}
	end(parent.ID)
	_, err = child(1, parent.ID)
	wantErr(t, "a child of an ended parent", err, store.ErrInvariant)
	wantErr(t, "archiving a tree with live children", archive(parent.ID), store.ErrInvariant)
	end(c1.ID)
	end(grand.ID)
	wantErr(t, "archiving a child", archive(c1.ID), store.ErrInvariant)
	f.must(archive(parent.ID))
	_ = f.s.Local().View(context.Background(), func(tx store.LocalTx) error {
		for _, id := range []string{parent.ID, c1.ID, grand.ID} {
			if _, err := tx.Invocation(id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s is live after the archive: %v", id, err)
			}
			if _, err := tx.ArchivedInvocation(id); err != nil {
				t.Fatalf("%s is not archived: %v", id, err)
			}
		}
		return nil
	})
	rep, err = f.s.Check(context.Background())
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check of an archived tree: %+v %v", rep, err)
	}
	// A delegation the records do not add up to is found.
	tamper(t, f, bucketArchive, []byte(parent.ID), replace(`"delegated":"30"`, `"delegated":"20"`))
	rep, err = f.s.Check(context.Background())
	if err != nil || len(rep.Problems) == 0 {
		t.Fatalf("check of a broken delegation: %+v %v", rep, err)
	}
}

// TestStaleRevisionActsNoMore: once its prog is upgraded, an invocation
// of the replaced revision has no operation proposed, attempted or
// claimed, whatever the caller checked before.
func TestStaleRevisionActsNoMore(t *testing.T) {
	f := newFx(t)
	p, inv := f.setup()
	// Three operations of revision 0, at stages 0 (proposed) and 1
	// (attempted, not claimed), and one not proposed yet.
	other := func() *store.Invocation {
		i := &store.Invocation{Neuron: inv.Neuron, Network: inv.Network, Prog: p.ID, Limit: 100, Epoch: 1,
			Status: store.InvocationRunning, Created: f.now}
		f.must(f.update(func(tx store.LocalTx) error { return tx.CreateInvocation(i) }))
		return i
	}
	attempted, fresh := other(), other()
	opProposed, opAttempted := f.operation(inv, 0), f.operation(attempted, 0)
	f.must(f.update(func(tx store.LocalTx) error {
		if err := tx.CreateOperation(opProposed); err != nil {
			return err
		}
		if err := tx.CreateOperation(opAttempted); err != nil {
			return err
		}
		return tx.RecordAttempt(f.attempt(opAttempted, 1, worker("b1")))
	}))
	f.must(f.update(func(tx store.LocalTx) error { return tx.UpgradeProg(f.next(p, "[1 42]")) }))
	wantErr(t, "a proposal", f.update(func(tx store.LocalTx) error { return tx.CreateOperation(f.operation(fresh, 0)) }), ErrStaleRevision)
	wantErr(t, "a worker attempt", f.update(func(tx store.LocalTx) error {
		return tx.RecordAttempt(f.attempt(opProposed, 1, worker("b1")))
	}), ErrStaleRevision)
	wantErr(t, "a manual take", f.update(func(tx store.LocalTx) error { return tx.RecordAttempt(f.attempt(opProposed, 0, nil)) }), ErrStaleRevision)
	wantErr(t, "a claim", f.update(func(tx store.LocalTx) error { return tx.RecordClaim(f.claim(opAttempted, 1, worker("b1"))) }), ErrStaleRevision)
	// What it did before stays, and is resolved as any other: the
	// proposal is dropped, the attempt gets its outcome.
	f.must(f.update(func(tx store.LocalTx) error {
		if err := tx.ConsumeOperation(opProposed.ID); err != nil {
			return err
		}
		_, err := tx.RecordOutcome(&store.Outcome{Operation: opAttempted.ID, Attempt: 1, Kind: store.OutcomeFailed, Message: "x",
			Source: "reconcile", Recorded: f.now})
		return err
	}))
	rep, err := f.s.Check(context.Background())
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

// TestCheckFindsBrokenRevisionsAndTrees: the store check finds a
// superseded revision that is missing or not below its prog's, an
// invocation of a revision its prog never reached, and a child its
// parent's index does not list.
func TestCheckFindsBrokenRevisionsAndTrees(t *testing.T) {
	problems := func(f *fx) []string {
		t.Helper()
		rep, err := f.s.Check(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return rep.Problems
	}
	upgraded := func() (*fx, *store.Prog, *store.Invocation) {
		f := newFx(t)
		p, inv := f.setup()
		np := f.next(p, "[1 42]")
		f.must(f.update(func(tx store.LocalTx) error { return tx.UpgradeProg(np) }))
		if got := problems(f); len(got) != 0 {
			t.Fatalf("a clean upgrade: %v", got)
		}
		return f, np, inv
	}
	f, np, _ := upgraded()
	tamper(t, f, bucketProgRevisions, revisionKey(np.ID, 0), replace(`"revision":"0"`, `"revision":"1"`))
	if len(problems(f)) < 2 { // revision 1 is not superseded, revision 0 is missing
		t.Fatalf("a revision record renumbered: %v", problems(f))
	}
	f, np, _ = upgraded()
	tamper(t, f, bucketProgs, []byte(np.ID), replace(`"revision":"1"`, `"revision":"2"`))
	if len(problems(f)) == 0 {
		t.Fatal("a prog two revisions on with one kept: no problem found")
	}
	f, _, inv := upgraded()
	tamper(t, f, bucketInvocations, []byte(inv.ID), replace(`"prog_revision":"0"`, `"prog_revision":"7"`))
	if len(problems(f)) == 0 {
		t.Fatal("an invocation of a revision not reached: no problem found")
	}
	f, _, inv = upgraded()
	tamper(t, f, bucketInvocations, []byte(inv.ID), replace(`"status"`, `"parent":"`+inv.ID+`","status"`))
	if len(problems(f)) == 0 {
		t.Fatal("a child missing from the index: no problem found")
	}
}
