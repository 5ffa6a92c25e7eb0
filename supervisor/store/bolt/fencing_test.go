package bolt

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: %v, want %v", what, err, target)
	}
}

func TestRootMovesByPlacementOrPolicy(t *testing.T) {
	f := newFx(t)
	put := func(r *store.Root) error { return f.update(func(tx store.LocalTx) error { return tx.PutRoot(r) }) }
	wantErr(t, "a new root at generation 1", put(f.root(1, 1, worker("b"))), store.ErrInvariant)
	wantErr(t, "a worker at generation 0", put(f.root(0, 1, worker("b"))), store.ErrInvariant)
	wantErr(t, "epoch 0", put(f.root(0, 0, nil)), store.ErrInvariant)
	f.must(put(f.root(0, 1, nil)))
	f.must(put(f.root(1, 1, worker("b1"))))
	wantErr(t, "a stale generation (1 → 1)", put(f.root(1, 1, worker("b2"))), store.ErrConflict)
	wantErr(t, "a skipped generation (1 → 3)", put(f.root(3, 1, worker("b2"))), store.ErrConflict)
	wantErr(t, "a placement that changes the epoch", put(f.root(2, 2, worker("b2"))), store.ErrConflict)
	f.must(put(f.root(2, 1, worker("b2"))))
	f.must(put(f.root(3, 1, nil))) // release
	wantErr(t, "a policy change without a larger epoch", put(f.root(3, 1, nil)), store.ErrConflict)
	f.must(put(f.root(3, 2, nil)))
	other := f.root(4, 2, worker("b3"))
	other.Worker.Network = "othernet"
	other.Signature = f.sign(other.Statement())
	wantErr(t, "a worker of another network", put(other), store.ErrInvariant)
	moved := f.root(4, 2, nil)
	moved.Network = "othernet"
	moved.Signature = f.sign(moved.Statement())
	wantErr(t, "a changed network", put(moved), store.ErrConflict)
	bad := f.root(4, 2, worker("b3"))
	// A copy: the key remembers the signatures it made (Made), and the
	// slice it returns is the one it remembers.
	bad.Signature = slices.Clone(bad.Signature)
	bad.Signature[5] ^= 1
	wantErr(t, "a bad signature", put(bad), store.ErrTampered)
	k2, _ := neuron.GenerateKey()
	stranger := f.root(4, 2, worker("b3"))
	stranger.Neuron, stranger.PublicKey = k2.ID(), k2.PublicKey()
	stranger.Signature, _ = k2.Sign(stranger.Statement())
	wantErr(t, "another key's root", put(stranger), store.ErrSubject)
	_ = f.s.Local().View(context.Background(), func(tx store.LocalTx) error {
		r, err := tx.Root()
		if err != nil || r.Generation != 3 || r.Epoch != 2 || r.Worker != nil {
			t.Fatalf("root %+v %v", r, err)
		}
		return nil
	})
}

// tamper rewrites one stored value through bbolt directly, as an
// attacker with the file would: the seal is a checksum, not a MAC, so
// the attacker seals the altered payload again. Only the signature can
// tell.
func tamper(t *testing.T, f *fx, bucket []byte, key []byte, edit func([]byte) []byte) {
	t.Helper()
	f.s.Close()
	db, err := bbolt.Open(f.s.Path(), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucket)
		v := b.Get(key)
		if v == nil {
			t.Fatalf("no %s/%q to tamper with", bucket, key)
		}
		payload, ok := unseal(bucket, key, v)
		if !ok {
			t.Fatalf("%s/%q is not sealed", bucket, key)
		}
		return b.Put(key, seal(bucket, key, edit(append([]byte(nil), payload...))))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	f.s = nil
	f.reopen()
}

func replace(old, new string) func([]byte) []byte {
	return func(b []byte) []byte {
		s := string(b)
		for i := 0; i+len(old) <= len(s); i++ {
			if s[i:i+len(old)] == old {
				return []byte(s[:i] + new + s[i+len(old):])
			}
		}
		panic("tamper: " + old + " not found in " + s)
	}
}

// TestSignedRecordsAreCheckedOnRead: each signed record altered in the
// file is refused when read, not trusted.
func TestSignedRecordsAreCheckedOnRead(t *testing.T) {
	cases := []struct {
		name   string
		bucket []byte
		key    func(op string) []byte
		edit   func([]byte) []byte
		read   func(tx store.LocalTx, op string) error
	}{
		{"root generation", bucketNeuron, func(string) []byte { return keyRoot }, replace(`"generation":"1"`, `"generation":"7"`),
			func(tx store.LocalTx, _ string) error { _, err := tx.Root(); return err }},
		{"root epoch", bucketNeuron, func(string) []byte { return keyRoot }, replace(`"epoch":"1"`, `"epoch":"9"`),
			func(tx store.LocalTx, _ string) error { _, err := tx.Root(); return err }},
		{"grant acts", bucketGrants, func(string) []byte { return make([]byte, 8) }, replace(`"acts":["6"]`, `"acts":["1","6"]`),
			func(tx store.LocalTx, _ string) error { _, err := tx.Grant(); return err }},
		{"grant enabled", bucketGrants, func(string) []byte { return make([]byte, 8) }, replace(`"enabled":true`, `"enabled":false`),
			func(tx store.LocalTx, _ string) error { _, err := tx.Grant(); return err }},
		{"attempt generation", bucketActAttempts, func(op string) []byte { return opKey(op, 1) }, replace(`"generation":"1"`, `"generation":"2"`),
			func(tx store.LocalTx, op string) error { _, err := tx.ActAttempt(op, 1); return err }},
		{"claim worker", bucketClaims, func(op string) []byte { return opKey(op, 1) }, replace(`"boot_id":"b1"`, `"boot_id":"b9"`),
			func(tx store.LocalTx, op string) error { _, err := tx.Claim(op, 1); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t)
			_, inv := f.setup()
			op := f.operation(inv, 0)
			f.must(f.update(func(tx store.LocalTx) error {
				if err := tx.CreateOperation(op); err != nil {
					return err
				}
				if err := tx.RecordAttempt(f.attempt(op, 1, worker("b1"))); err != nil {
					return err
				}
				return tx.RecordClaim(f.claim(op, 1, worker("b1")))
			}))
			f.must(f.s.Local().View(context.Background(), func(tx store.LocalTx) error { return c.read(tx, op.ID) }))
			tamper(t, f, c.bucket, c.key(op.ID), c.edit)
			err := f.s.Local().View(context.Background(), func(tx store.LocalTx) error { return c.read(tx, op.ID) })
			wantErr(t, "read after tampering", err, store.ErrTampered)
		})
	}
}

func TestSignedRecordsNeedTheKey(t *testing.T) {
	f := newFx(t)
	f.setup()
	f.s.Close()
	s, err := Open(f.dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Local().View(context.Background(), func(tx store.LocalTx) error { _, err := tx.Root(); return err })
	wantErr(t, "root without the key", err, store.ErrUntrusted)
	f.s = nil
}

func TestGrantIsACASOnRevision(t *testing.T) {
	f := newFx(t)
	put := func(g *store.Grant) error { return f.update(func(tx store.LocalTx) error { return tx.PutGrant(g) }) }
	wantErr(t, "a grant before the root", put(f.grant(0)), store.ErrNotFound)
	f.must(f.update(func(tx store.LocalTx) error { return tx.PutRoot(f.root(0, 1, nil)) }))
	wantErr(t, "first grant at revision 1", put(f.grant(1)), store.ErrConflict)
	f.must(put(f.grant(0, 6)))
	wantErr(t, "a stale revision", put(f.grant(0, 1)), store.ErrConflict)
	wantErr(t, "a skipped revision", put(f.grant(2, 1)), store.ErrConflict)
	wantErr(t, "unsorted acts", put(f.grant(1, 6, 1)), store.ErrInvariant)
	g := f.grant(1)
	g.Epoch = 0
	g.Signature = f.sign(g.Statement())
	wantErr(t, "a lower epoch", put(g), store.ErrConflict)
	g = f.grant(1)
	g.Network = "othernet"
	g.Signature = f.sign(g.Statement())
	wantErr(t, "another network", put(g), store.ErrConflict)
	g = f.grant(1, 1)
	g.Progs = []string{}
	g.Signature = f.sign(g.Statement())
	f.must(put(g))
	_ = f.s.Local().View(context.Background(), func(tx store.LocalTx) error {
		cur, err := tx.Grant()
		if err != nil || cur.Revision != 1 || cur.Progs == nil || len(cur.Progs) != 0 {
			t.Fatalf("current grant %+v %v (an empty prog set must stay empty, not become 'any')", cur, err)
		}
		old, err := tx.GrantRevision(0)
		if err != nil || len(old.Acts) != 1 || old.Progs != nil {
			t.Fatalf("grant 0 %+v %v", old, err)
		}
		return nil
	})
}

func TestProgLifecycleAndRetirement(t *testing.T) {
	f := newFx(t)
	p, inv := f.setup()
	move := func(s store.ProgState) error {
		return f.update(func(tx store.LocalTx) error {
			cur, err := tx.Prog(p.ID)
			if err != nil {
				return err
			}
			cur.State = s
			return tx.PutProg(cur)
		})
	}
	wantErr(t, "retiring with a live invocation", move(store.ProgRetiring), store.ErrInvariant)
	f.must(move(store.ProgPaused))
	wantErr(t, "invoking a paused prog", f.update(func(tx store.LocalTx) error {
		return tx.CreateInvocation(&store.Invocation{Neuron: inv.Neuron, Network: inv.Network, Prog: p.ID, Limit: 100, Epoch: 1, Status: store.InvocationRunning, Created: f.now})
	}), store.ErrInvariant)
	wantErr(t, "paused → installed", move(store.ProgInstalled), store.ErrInvariant)
	f.must(move(store.ProgActive))
	f.must(f.update(func(tx store.LocalTx) error {
		cur, _ := tx.Invocation(inv.ID)
		cur.Status = store.InvocationCancelled
		cur.Error = protocol.Errorf(protocol.CodeCancelled, "test")
		return tx.PutInvocation(cur)
	}))
	f.must(move(store.ProgRetiring))
	f.must(move(store.ProgRetired))
	wantErr(t, "retired → active", move(store.ProgActive), store.ErrInvariant)
	wantErr(t, "changing a prog's limit", f.update(func(tx store.LocalTx) error {
		cur, _ := tx.Prog(p.ID)
		cur.StepLimit++
		return tx.PutProg(cur)
	}), store.ErrConflict)
}

func TestMaxInFlight(t *testing.T) {
	f := newFx(t)
	p, inv := f.setup() // max in flight 4, one live
	add := func() error {
		return f.update(func(tx store.LocalTx) error {
			return tx.CreateInvocation(&store.Invocation{Neuron: inv.Neuron, Network: inv.Network, Prog: p.ID, Limit: 100, Epoch: 1, Status: store.InvocationRunning, Created: f.now})
		})
	}
	for i := 0; i < 3; i++ {
		f.must(add())
	}
	wantErr(t, "a fifth live invocation", add(), store.ErrInvariant)
}

func TestReservationsNeverExceedTheLimit(t *testing.T) {
	f := newFx(t)
	_, inv := f.setup() // limit 100
	reserve := func(steps, base uint64) error {
		return f.update(func(tx store.LocalTx) error {
			return tx.Reserve(&store.Reservation{Invocation: inv.ID, Steps: steps, Base: base, Boot: "b1", Created: f.now})
		})
	}
	charge := func(used uint64) error {
		return f.update(func(tx store.LocalTx) error { return tx.Charge(inv.ID, used) })
	}
	wantErr(t, "charge without a reservation", charge(1), store.ErrNotFound)
	wantErr(t, "more than the limit", reserve(101, 0), store.ErrInvariant)
	wantErr(t, "zero steps", reserve(0, 0), store.ErrInvariant)
	f.must(reserve(60, 0))
	wantErr(t, "a second reservation", reserve(10, 0), store.ErrInvariant)
	wantErr(t, "charging more than held", charge(61), store.ErrInvariant)
	f.must(charge(25))
	wantErr(t, "a stale base", reserve(10, 0), store.ErrConflict)
	wantErr(t, "beyond what is left", reserve(76, 25), store.ErrInvariant)
	f.must(reserve(75, 25))
	f.must(charge(75))
	wantErr(t, "nothing left", reserve(1, 100), store.ErrInvariant)
	_ = f.s.Local().View(context.Background(), func(tx store.LocalTx) error {
		cur, _ := tx.Invocation(inv.ID)
		if cur.Charged != 100 || cur.Held != 0 {
			t.Fatalf("charged %d held %d, want 100 and 0", cur.Charged, cur.Held)
		}
		return nil
	})
	wantErr(t, "changing charged through PutInvocation", f.update(func(tx store.LocalTx) error {
		cur, _ := tx.Invocation(inv.ID)
		cur.Charged = 0
		return tx.PutInvocation(cur)
	}), store.ErrInvariant)
}

func TestOperationAttemptClaimOutcome(t *testing.T) {
	f := newFx(t)
	_, inv := f.setup()
	op := f.operation(inv, 0)
	wantErr(t, "an operation out of order", f.update(func(tx store.LocalTx) error { return tx.CreateOperation(f.operation(inv, 1)) }), store.ErrConflict)
	f.must(f.update(func(tx store.LocalTx) error { return tx.CreateOperation(op) }))
	wantErr(t, "a second proposal while one is pending", f.update(func(tx store.LocalTx) error { return tx.CreateOperation(f.operation(inv, 1)) }), store.ErrInvariant)
	wantErr(t, "ending with a pending proposal", f.update(func(tx store.LocalTx) error {
		cur, _ := tx.Invocation(inv.ID)
		cur.Status, cur.Error = store.InvocationFailed, protocol.Errorf(protocol.CodeExecutionFailed, "x")
		return tx.PutInvocation(cur)
	}), store.ErrInvariant)
	wantErr(t, "a claim before the attempt", f.update(func(tx store.LocalTx) error { return tx.RecordClaim(f.claim(op, 1, worker("b1"))) }), store.ErrNotFound)
	wantErr(t, "an attempt for a stale placement", f.update(func(tx store.LocalTx) error { return tx.RecordAttempt(f.attempt(op, 2, worker("b2"))) }), store.ErrConflict)
	wantErr(t, "a manual attempt with a generation", f.update(func(tx store.LocalTx) error {
		a := f.attempt(op, 1, nil)
		a.Generation = 1
		a.Authorization = f.sign(a.Statement())
		return tx.RecordAttempt(a)
	}), store.ErrInvariant)
	wrongDigest := f.attempt(op, 1, worker("b1"))
	wrongDigest.OpDigest = make([]byte, 32)
	wrongDigest.Authorization = f.sign(wrongDigest.Statement())
	wantErr(t, "an attempt for another operation body", f.update(func(tx store.LocalTx) error { return tx.RecordAttempt(wrongDigest) }), store.ErrConflict)
	f.must(f.update(func(tx store.LocalTx) error { return tx.RecordAttempt(f.attempt(op, 1, worker("b1"))) }))
	wantErr(t, "a second attempt", f.update(func(tx store.LocalTx) error { return tx.RecordAttempt(f.attempt(op, 1, worker("b1"))) }), store.ErrConflict)
	wantErr(t, "consuming an unknown attempt", f.update(func(tx store.LocalTx) error { return tx.ConsumeOperation(op.ID) }), store.ErrInvariant)
	c := f.claim(op, 1, worker("b1"))
	f.must(f.update(func(tx store.LocalTx) error { return tx.RecordClaim(c) }))
	wantErr(t, "the identical claim again", f.update(func(tx store.LocalTx) error { return tx.RecordClaim(c) }), store.ErrClaimed)
	value := noun.AppendTokens(nil, noun.Atom(7))
	o := &store.Outcome{Operation: op.ID, Attempt: 1, Kind: store.OutcomeValue, Value: value, Source: "act", Recorded: f.now}
	var recorded bool
	f.must(f.update(func(tx store.LocalTx) (err error) { recorded, err = tx.RecordOutcome(o); return err }))
	if !recorded {
		t.Fatal("the first outcome was not recorded")
	}
	same := *o
	same.Source, same.Recorded = "reconcile", f.now.Add(time.Hour)
	f.must(f.update(func(tx store.LocalTx) (err error) { recorded, err = tx.RecordOutcome(&same); return err }))
	if recorded {
		t.Fatal("the same outcome was recorded twice")
	}
	other := *o
	other.Value = noun.AppendTokens(nil, noun.Atom(8))
	wantErr(t, "a different outcome", f.update(func(tx store.LocalTx) error { _, err := tx.RecordOutcome(&other); return err }), store.ErrConflict)
	failed := &store.Outcome{Operation: op.ID, Attempt: 1, Kind: store.OutcomeFailed, Message: "x", Source: "reconcile", Recorded: f.now}
	wantErr(t, "a failure after a value", f.update(func(tx store.LocalTx) error { _, err := tx.RecordOutcome(failed); return err }), store.ErrConflict)
	f.must(f.update(func(tx store.LocalTx) error { return tx.ConsumeOperation(op.ID) }))
	_ = f.s.Local().View(context.Background(), func(tx store.LocalTx) error {
		cur, _ := tx.Invocation(inv.ID)
		if cur.Pending != "" || cur.Status != store.InvocationRunning || cur.Ordinal != 1 {
			t.Fatalf("after consuming: %+v", cur)
		}
		ops, err := tx.Operations(inv.ID)
		if err != nil || len(ops) != 1 || ops[0].Stage != store.StageConsumed {
			t.Fatalf("operations %v %v", ops, err)
		}
		return nil
	})
	// The outcome stays idempotent after consumption.
	f.must(f.update(func(tx store.LocalTx) (err error) { _, err = tx.RecordOutcome(&same); return err }))
}

// TestClaimNeedsTheCurrentPlacement: an attempt prepared by boot 1 can no
// longer be claimed once boot 2 is bound; a manual attempt never.
func TestClaimNeedsTheCurrentPlacement(t *testing.T) {
	f := newFx(t)
	_, inv := f.setup()
	op := f.operation(inv, 0)
	f.must(f.update(func(tx store.LocalTx) error {
		if err := tx.CreateOperation(op); err != nil {
			return err
		}
		return tx.RecordAttempt(f.attempt(op, 1, worker("b1")))
	}))
	f.must(f.update(func(tx store.LocalTx) error { return tx.PutRoot(f.root(2, 1, worker("b2"))) }))
	wantErr(t, "claiming for the replaced boot", f.update(func(tx store.LocalTx) error { return tx.RecordClaim(f.claim(op, 1, worker("b1"))) }), store.ErrConflict)
	wantErr(t, "claiming with the new boot's descriptor", f.update(func(tx store.LocalTx) error { return tx.RecordClaim(f.claim(op, 2, worker("b2"))) }), store.ErrConflict)

	f2 := newFx(t)
	_, inv2 := f2.setup()
	op2 := f2.operation(inv2, 0)
	f2.must(f2.update(func(tx store.LocalTx) error {
		if err := tx.CreateOperation(op2); err != nil {
			return err
		}
		return tx.RecordAttempt(f2.attempt(op2, 0, nil))
	}))
	wantErr(t, "claiming a manual attempt", f2.update(func(tx store.LocalTx) error { return tx.RecordClaim(f2.claim(op2, 1, worker("b1"))) }), store.ErrInvariant)
}

// TestBatchDecidesClaimsOneByOne: many writers share commits, and two
// claims of one attempt in flight together still give one claim.
func TestBatchDecidesClaimsOneByOne(t *testing.T) {
	f := newFx(t)
	_, inv := f.setup()
	op := f.operation(inv, 0)
	f.must(f.update(func(tx store.LocalTx) error {
		if err := tx.CreateOperation(op); err != nil {
			return err
		}
		return tx.RecordAttempt(f.attempt(op, 1, worker("b1")))
	}))
	c := f.claim(op, 1, worker("b1"))
	const n = 32
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f.s.Local().Batch(context.Background(), func(tx store.LocalTx) error { return tx.RecordClaim(c) })
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrClaimed):
			t.Fatalf("a claim failed otherwise: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d claims won, want exactly 1", won)
	}
	// A failing call does not take the others of its batch with it.
	var ok [8]bool
	var wg2 sync.WaitGroup
	for i := range 8 {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			err := f.s.Local().Batch(context.Background(), func(tx store.LocalTx) error {
				m, err := tx.Meta()
				if err != nil {
					return err
				}
				if i%2 == 1 {
					return errors.New("refused")
				}
				m.NextSeq++
				return tx.PutMeta(m)
			})
			ok[i] = err == nil
		}()
	}
	wg2.Wait()
	_ = f.s.Local().View(context.Background(), func(tx store.LocalTx) error {
		m, _ := tx.Meta()
		if m.NextSeq != 4 {
			t.Fatalf("next_seq %d after 4 successful increments", m.NextSeq)
		}
		return nil
	})
	for i, o := range ok {
		if o != (i%2 == 0) {
			t.Fatalf("call %d: ok=%v", i, o)
		}
	}
}

func TestBatchSurvivesAPanic(t *testing.T) {
	f := newFx(t)
	err := f.s.Local().Batch(context.Background(), func(store.LocalTx) error { panic("boom") })
	wantErr(t, "a panicking batch function", err, store.ErrInvariant)
	f.must(f.s.Local().Batch(context.Background(), func(tx store.LocalTx) error { _, err := tx.Meta(); return err }))
}

func TestJobClaims(t *testing.T) {
	// Without a neuron: generation 0, unsigned, once.
	s := open(t, t.TempDir())
	ctx := context.Background()
	j := newJob("j")
	desc := protocol.WorkerDescriptor{Machine: protocol.MachineNox, Environment: protocol.EnvPublicStateless, ProofProfile: protocol.ProfilePublicTrace,
		Network: "local", Executor: protocol.Executor{Warrior: protocol.WarriorNoxWorker, Version: "t", Backend: protocol.BackendIsolatedProcess,
			WorkerID: "w", DeviceID: "d", BootID: "b"}, MaxArgumentBytes: 1}
	if err := s.Local().Update(ctx, func(tx store.LocalTx) error {
		if err := create(tx, j); err != nil {
			return err
		}
		j.Attempts = 1
		if err := tx.PutJob(j); err != nil {
			return err
		}
		return tx.PutAttempt(&store.Attempt{Job: "j", N: 1, Boot: "b", State: lifecycle.Queued})
	}); err != nil {
		t.Fatal(err)
	}
	c := &store.JobClaim{Job: "j", Attempt: 1, Worker: desc}
	if err := s.Local().Update(ctx, func(tx store.LocalTx) error { return tx.RecordJobClaim(c) }); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "a second job claim", s.Local().Update(ctx, func(tx store.LocalTx) error { return tx.RecordJobClaim(c) }), store.ErrClaimed)
	_ = s.Local().View(ctx, func(tx store.LocalTx) error {
		got, err := tx.JobClaim("j", 1)
		if err != nil || got.Generation != 0 || got.Signature != nil {
			t.Fatalf("job claim %+v %v", got, err)
		}
		return nil
	})
}

// TestJobAttemptsCarryThePlacement: with a neuron, a job attempt is made
// at the current generation and claimed (signed) only while it is
// current.
func TestJobAttemptsCarryThePlacement(t *testing.T) {
	f := newFx(t)
	f.setup() // generation 1
	j := newJob("j")
	desc := *worker("b1")
	wantErr(t, "an attempt at a stale generation", f.update(func(tx store.LocalTx) error {
		if err := create(tx, j); err != nil {
			return err
		}
		j.Attempts = 1
		if err := tx.PutJob(j); err != nil {
			return err
		}
		return tx.PutAttempt(&store.Attempt{Job: "j", N: 1, Boot: "b", Generation: 0, State: lifecycle.Queued})
	}), store.ErrConflict)
	f.must(f.update(func(tx store.LocalTx) error {
		if err := create(tx, j); err != nil {
			return err
		}
		j.Attempts = 2
		if err := tx.PutJob(j); err != nil {
			return err
		}
		if err := tx.PutAttempt(&store.Attempt{Job: "j", N: 1, Boot: "b", Generation: 1, State: lifecycle.Queued}); err != nil {
			return err
		}
		return tx.PutAttempt(&store.Attempt{Job: "j", N: 2, Boot: "b", Generation: 1, State: lifecycle.Queued})
	}))
	unsigned := &store.JobClaim{Job: "j", Attempt: 1, Generation: 1, Worker: desc, Created: f.now}
	wantErr(t, "an unsigned claim in a home with a neuron", f.update(func(tx store.LocalTx) error { return tx.RecordJobClaim(unsigned) }), store.ErrTampered)
	signed := *unsigned
	signed.Signature = f.sign(signed.Statement())
	f.must(f.update(func(tx store.LocalTx) error { return tx.RecordJobClaim(&signed) }))
	f.must(f.update(func(tx store.LocalTx) error { return tx.PutRoot(f.root(2, 1, worker("b2"))) }))
	old := &store.JobClaim{Job: "j", Attempt: 2, Generation: 1, Worker: desc, Created: f.now}
	old.Signature = f.sign(old.Statement())
	wantErr(t, "claiming an attempt of an older generation", f.update(func(tx store.LocalTx) error { return tx.RecordJobClaim(old) }), store.ErrConflict)
	tamper(t, f, bucketJobClaims, attemptKey("j", 1), replace(`"generation":"1"`, `"generation":"3"`))
	wantErr(t, "a tampered job claim", f.s.Local().View(context.Background(), func(tx store.LocalTx) error { _, err := tx.JobClaim("j", 1); return err }), store.ErrTampered)
}

// TestCheckCoversFencing: a store check reads every fencing record,
// verifies its signatures with the neuron's key, and reports a signed
// record that was altered and sealed again.
func TestCheckCoversFencing(t *testing.T) {
	f := newFx(t)
	_, inv := f.setup()
	op := f.operation(inv, 0)
	f.must(f.update(func(tx store.LocalTx) error {
		if err := tx.CreateOperation(op); err != nil {
			return err
		}
		if err := tx.RecordAttempt(f.attempt(op, 1, worker("b1"))); err != nil {
			return err
		}
		if err := tx.RecordClaim(f.claim(op, 1, worker("b1"))); err != nil {
			return err
		}
		return tx.Reserve(&store.Reservation{Invocation: inv.ID, Steps: 5, Created: f.now})
	}))
	rep, err := f.s.Check(context.Background())
	if err != nil || len(rep.Problems) != 0 || rep.Signatures != "verified" || rep.Fencing < 9 {
		t.Fatalf("check of a sound store: %+v %v", rep, err)
	}
	tamper(t, f, bucketClaims, opKey(op.ID, 1), replace(`"boot_id":"b1"`, `"boot_id":"b9"`))
	rep, err = f.s.Check(context.Background())
	if err != nil || len(rep.Problems) == 0 {
		t.Fatalf("check of an altered claim: %+v %v", rep, err)
	}
	// The same file checked offline: with the key the altered record is
	// found (its tag), without it nothing can tell.
	path := f.s.Path()
	f.s.Close()
	rep, err = CheckFileTrusting(path, time.Second, f.key)
	if err != nil || rep.Signatures != "verified" || !slices.ContainsFunc(rep.Problems, func(p string) bool {
		return strings.HasPrefix(p, "claims/") && strings.Contains(p, "does not verify")
	}) {
		t.Fatalf("offline check with the key: %+v %v", rep, err)
	}
	rep, err = CheckFile(path, time.Second)
	if err != nil || rep.Signatures != "not checked (no neuron key)" || len(rep.Problems) != 0 {
		t.Fatalf("offline check without the key: %+v %v", rep, err)
	}
	f.s = nil
	f.reopen()
}
