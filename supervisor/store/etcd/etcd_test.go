package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/storetest"
)

var testPrefix atomic.Uint64

func openTest(t *testing.T, srv *etcdtest.Server, prefix string) *Store {
	t.Helper()
	// A long lease: these tests take registrations away themselves, and a
	// short one could expire on its own on a loaded machine.
	s, err := Open(context.Background(), Config{Endpoints: []string{srv.Endpoint}, Prefix: prefix, LeaseTTL: 10 * time.Second, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func pair(t *testing.T) (*Store, *Store, *etcdtest.Server) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	p := fmt.Sprintf("/t%d/", testPrefix.Add(1))
	return openTest(t, srv, p), openTest(t, srv, p), srv
}

func mustUpdate(t *testing.T, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// A key read by a transaction and changed by another before its commit
// makes it run again, on the new value.
func TestConflictRunsAgain(t *testing.T) {
	a, b, _ := pair(t)
	j := storetest.NewJob("c1")
	mustUpdate(t, a, func(tx store.Tx) error { return storetest.Create(tx, j) })
	runs := 0
	mustUpdate(t, a, func(tx store.Tx) error {
		runs++
		got, err := tx.Job("c1")
		if err != nil {
			return err
		}
		if runs == 1 {
			// Another host changes the job between the read and the commit.
			mustUpdate(t, b, func(tx store.Tx) error {
				o, err := tx.Job("c1")
				if err != nil {
					return err
				}
				o.Priority = 9
				return tx.PutJob(o)
			})
		}
		got.Attempts++
		return tx.PutJob(got)
	})
	if runs != 2 {
		t.Fatalf("fn ran %d times, want 2", runs)
	}
	_ = a.View(context.Background(), func(tx store.Tx) error {
		got, _ := tx.Job("c1")
		if got.Priority != 9 || got.Attempts != 1 {
			t.Fatalf("lost update: %+v", got)
		}
		return nil
	})
}

// A transaction that took the head of the queue conflicts with a job
// queued ahead of it meanwhile, not with one queued behind it.
func TestQueueScanProtectsWhatItVisited(t *testing.T) {
	a, b, _ := pair(t)
	mustUpdate(t, a, func(tx store.Tx) error { return tx.Enqueue("mid", 0, 1) })
	take := func(insert func()) (runs int, took string) {
		mustUpdate(t, a, func(tx store.Tx) error {
			runs++
			took = ""
			if err := tx.ForEachQueued(func(id string) bool { took = id; return false }); err != nil {
				return err
			}
			if runs == 1 {
				insert()
			}
			return tx.Dequeue(took)
		})
		return runs, took
	}
	runs, took := take(func() { mustUpdate(t, b, func(tx store.Tx) error { return tx.Enqueue("behind", -1, 2) }) })
	if runs != 1 || took != "mid" {
		t.Fatalf("a job queued behind: %d runs, took %s", runs, took)
	}
	runs, took = take(func() { mustUpdate(t, b, func(tx store.Tx) error { return tx.Enqueue("ahead", 5, 3) }) })
	if runs != 2 || took != "ahead" {
		t.Fatalf("a job queued ahead: %d runs, took %s", runs, took)
	}
}

// Two transactions creating the same write-once key: one commits.
func TestWriteOnceKeys(t *testing.T) {
	a, b, _ := pair(t)
	runs := 0
	err := a.Update(context.Background(), func(tx store.Tx) error {
		runs++
		if _, err := tx.Job("w1"); runs == 1 && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if runs == 1 {
			mustUpdate(t, b, func(tx store.Tx) error { return storetest.Create(tx, storetest.NewJob("w1")) })
		}
		return storetest.Create(tx, storetest.NewJob("w1"))
	})
	if !errors.Is(err, store.ErrConflict) || runs != 2 {
		t.Fatalf("second creation: %v after %d runs", err, runs)
	}
}

// An unknown outcome is resolved by racing the write's marker: a marker
// the write left says committed; an absent one is taken by the
// resolution, after which the write can never commit.
func TestUnknownOutcomeResolution(t *testing.T) {
	s, _, _ := pair(t)
	ctx := context.Background()
	m1 := s.k.markers("x") + "1"
	if _, err := s.cli.Put(ctx, m1, markerCommitted); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.resolve(ctx, m1); err != nil || !ok {
		t.Fatalf("resolve a committed write: %v %v", ok, err)
	}
	m2 := s.k.markers("x") + "2"
	if ok, err := s.resolve(ctx, m2); err != nil || ok {
		t.Fatalf("resolve a write that never arrived: %v %v", ok, err)
	}
	// The original, arriving late, is refused by its own marker compare.
	resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(m2), "=", 0)).
		Then(clientv3.OpPut(s.k.job("late"), "{}"), clientv3.OpPut(m2, markerCommitted)).Commit()
	if err != nil || resp.Succeeded {
		t.Fatalf("late original: %v succeeded %v", err, resp != nil && resp.Succeeded)
	}
	if ok, err := s.resolve(ctx, m2); err != nil || ok {
		t.Fatalf("resolve again: %v %v", ok, err)
	}
	// Committed writes' markers are deleted by the next writes.
	for i := range 3 {
		mustUpdate(t, s, func(tx store.Tx) error { return tx.Enqueue(fmt.Sprint("m", i), 0, uint64(i+1)) })
	}
	resp2, err := s.cli.Get(ctx, s.k.markers(s.markers), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp2.Count != 1 {
		t.Fatalf("markers left: %d %v", resp2.Count, err)
	}
}

// A joined boot writes as itself; once its registration is gone (the
// lease expired while it was paused, say) every write fails ErrFenced,
// even before its own keepalive noticed.
func TestRegistrationFencesWrites(t *testing.T) {
	a, b, _ := pair(t)
	ctx := context.Background()
	m, err := a.Join(ctx, store.HostBoot{Host: "h1", Boot: "boot-1", Slots: 2})
	if err != nil {
		t.Fatal(err)
	}
	hb := m.HostBoot()
	if hb.Generation == 0 {
		t.Fatal("no generation")
	}
	j := storetest.NewJob("f1")
	j.Attempts = 1
	mustUpdate(t, a, func(tx store.Tx) error {
		if err := storetest.Create(tx, j); err != nil {
			return err
		}
		return tx.PutAttempt(&store.Attempt{Job: "f1", N: 1, Host: "h1", Boot: "boot-1", Generation: hb.Generation, State: lifecycle.Queued})
	})
	// An attempt prepared under another identity is refused.
	j2 := storetest.NewJob("f2")
	j2.Attempts = 1
	err = a.Update(ctx, func(tx store.Tx) error {
		if err := storetest.Create(tx, j2); err != nil {
			return err
		}
		return tx.PutAttempt(&store.Attempt{Job: "f2", N: 1, Host: "h1", Boot: "other", Generation: hb.Generation, State: lifecycle.Queued})
	})
	if !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("attempt of another boot: %v", err)
	}
	hosts, err := b.Hosts(ctx)
	if err != nil || len(hosts) != 1 || hosts[0].Boot != "boot-1" || hosts[0].Generation != hb.Generation {
		t.Fatalf("hosts %+v %v", hosts, err)
	}
	// The registration goes behind the boot's back.
	if _, err := b.cli.Delete(ctx, b.k.host("h1")); err != nil {
		t.Fatal(err)
	}
	err = a.Update(ctx, func(tx store.Tx) error {
		at, err := tx.Attempt("f1", 1)
		if err != nil {
			return err
		}
		at.State = lifecycle.Running
		return tx.PutAttempt(at)
	})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("write after the registration went: %v", err)
	}
	select {
	case <-m.Lost():
	default:
		t.Fatal("membership not lost")
	}
	if err := a.Update(ctx, func(tx store.Tx) error { return tx.Enqueue("x", 0, 1) }); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("later write: %v", err)
	}
	// A new boot of the host joins with a larger generation.
	m2, err := a.Join(ctx, store.HostBoot{Host: "h1", Boot: "boot-2"})
	if err != nil {
		t.Fatal(err)
	}
	if m2.HostBoot().Generation <= hb.Generation {
		t.Fatalf("generation %d after %d", m2.HostBoot().Generation, hb.Generation)
	}
	mustUpdate(t, a, func(tx store.Tx) error { return tx.Enqueue("x", 0, 1) })
}

// A lease that etcd expires (no keepalive reaches it) fences the boot,
// and a later boot of the same host replaces a registration still there.
func TestLeaseLossAndTakeover(t *testing.T) {
	a, b, _ := pair(t)
	ctx := context.Background()
	m, err := a.Join(ctx, store.HostBoot{Host: "h2", Boot: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	// Another boot of the host takes over (the old one is gone: a crash).
	m2, err := b.Join(ctx, store.HostBoot{Host: "h2", Boot: "b2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, func(tx store.Tx) error { return tx.Enqueue("y", 0, 1) }); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("write of the replaced boot: %v", err)
	}
	// The replaced boot's lease is revoked by its own fencing; b2's stays.
	time.Sleep(3 * time.Second)
	select {
	case <-m2.Lost():
		t.Fatal("the new boot lost its registration")
	default:
	}
	hosts, _ := b.Hosts(ctx)
	if len(hosts) != 1 || hosts[0].Boot != "b2" {
		t.Fatalf("hosts %+v", hosts)
	}
	_ = m
	// Revoking b2's lease (as its expiry would) is noticed by its keepalive.
	if _, err := a.cli.Revoke(ctx, b.member.lease); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m2.Lost():
	case <-time.After(60 * time.Second):
		t.Fatal("a revoked lease was not noticed")
	}
	if err := m2.Leave(ctx); err != nil {
		t.Fatal(err)
	}
}

// A commit whose reply is lost committed: the store finds its marker and
// does not run fn again. A commit whose request is lost did not: the
// resolution aborts it for good and fn runs again, once. Either way the
// write is in the store exactly once.
func TestUnknownOutcomeOfACommit(t *testing.T) {
	s, _, _ := pair(t)
	for _, fault := range []int32{loseReply, loseRequest} {
		id := fmt.Sprint("u", fault)
		runs := 0
		s.fault.Store(fault)
		mustUpdate(t, s, func(tx store.Tx) error {
			runs++
			if err := storetest.Create(tx, storetest.NewJob(id)); err != nil {
				return err
			}
			return tx.AppendEvent(store.Event{Job: id, To: lifecycle.Queued, Reason: "submitted"})
		})
		want := map[int32]int{loseReply: 1, loseRequest: 2}[fault]
		if runs != want {
			t.Errorf("fault %d: fn ran %d times, want %d", fault, runs, want)
		}
		_ = s.View(context.Background(), func(tx store.Tx) error {
			ev, err := tx.Events(id)
			if _, jerr := tx.Job(id); jerr != nil || err != nil || len(ev) != 1 {
				t.Errorf("fault %d: job %v, %d events %v", fault, jerr, len(ev), err)
			}
			return nil
		})
	}
	if st := s.Stats(); st.Unknown != 2 {
		t.Errorf("unknown outcomes %d, want 2", st.Unknown)
	}
}

// A key taken for absent without a read (the accepted index, where the
// job read from this handle's last commit names no accepted attempt) is
// compared at commit: an acceptance another handle committed meanwhile
// makes the first run conflict, and the run after it reads the index and
// refuses.
func TestAssumedAbsentKeysAreCompared(t *testing.T) {
	a, b, _ := pair(t)
	j := storetest.NewJob("assume")
	j.Attempts = 2
	mustUpdate(t, a, func(tx store.Tx) error {
		if err := storetest.Create(tx, j); err != nil {
			return err
		}
		for n := uint32(1); n <= 2; n++ {
			at := &store.Attempt{Job: j.ID, N: n, Boot: "b", State: lifecycle.Queued, Verified: []byte(`{}`)}
			for _, st := range []lifecycle.State{lifecycle.Queued, lifecycle.Running, lifecycle.Produced, lifecycle.Verified} {
				at.State = st
				if err := tx.PutAttempt(at); err != nil {
					return err
				}
			}
		}
		return nil
	})
	// b accepts attempt 1 behind a's back, the index only: a's last commit
	// still says the job has no accepted attempt.
	mustUpdate(t, b, func(tx store.Tx) error {
		at, err := tx.Attempt(j.ID, 1)
		if err != nil {
			return err
		}
		at.State = lifecycle.Accepted
		return tx.PutAttempt(at)
	})
	runs, assumed := 0, false
	err := a.Update(context.Background(), func(st store.Tx) error {
		runs++
		tx := st.(*tx)
		at, err := tx.Attempt(j.ID, 2)
		if err != nil {
			return err
		}
		at.State = lifecycle.Accepted
		err = tx.PutAttempt(at)
		if e, ok := tx.cache[tx.s.k.accepted(j.ID)]; runs == 1 && ok && !e.present && e.mod == 0 && tx.usedRecent {
			assumed = true
		}
		return err
	})
	if !errors.Is(err, store.ErrInvariant) || runs < 2 || !assumed {
		t.Fatalf("second acceptance: %v after %d runs (first run assumed the index absent: %v)", err, runs, assumed)
	}
	var acc []uint32
	if err := b.View(context.Background(), func(tx store.Tx) error {
		atts, err := tx.Attempts(j.ID)
		for _, at := range atts {
			if at.State == lifecycle.Accepted {
				acc = append(acc, at.N)
			}
		}
		return err
	}); err != nil || len(acc) != 1 || acc[0] != 1 {
		t.Fatalf("accepted attempts %v %v, want [1]", acc, err)
	}
}

// Claims, the accepted index and tombstones are never attached to a
// lease and never deleted: they outlive the job's removal and the
// registration (and lease) of the boot that wrote them.
func TestClaimsAndAcceptanceOutliveLeaseAndRemoval(t *testing.T) {
	a, b, _ := pair(t)
	ctx := context.Background()
	m, err := a.Join(ctx, store.HostBoot{Host: "h1", Boot: "boot-1", Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	hb := m.HostBoot()
	j := storetest.NewJob("kept")
	desc := protocol.WorkerDescriptor{Machine: protocol.MachineNox, Environment: protocol.EnvPublicStateless, ProofProfile: protocol.ProfilePublicTrace,
		Network: "local", Executor: protocol.Executor{Warrior: protocol.WarriorNoxWorker, Version: "t", Backend: protocol.BackendIsolatedProcess,
			WorkerID: "w", DeviceID: "d", BootID: hb.Boot}, MaxArgumentBytes: 1}
	mustUpdate(t, a, func(tx store.Tx) error {
		if err := storetest.Create(tx, j); err != nil {
			return err
		}
		job, err := tx.Job(j.ID)
		if err != nil {
			return err
		}
		job.Attempts = 1
		if err := tx.PutJob(job); err != nil {
			return err
		}
		if err := tx.PutAttempt(&store.Attempt{Job: j.ID, N: 1, Host: hb.Host, Boot: hb.Boot, Generation: hb.Generation, State: lifecycle.Queued}); err != nil {
			return err
		}
		return tx.RecordJobClaim(&store.JobClaim{Job: j.ID, Attempt: 1, Generation: hb.Generation, Worker: desc})
	})
	mustUpdate(t, a, func(tx store.Tx) error {
		at, err := tx.Attempt(j.ID, 1)
		if err != nil {
			return err
		}
		at.Verified = []byte(`{}`)
		for _, st := range []lifecycle.State{lifecycle.Running, lifecycle.Produced, lifecycle.Verified, lifecycle.Accepted} {
			at.State = st
			if err := tx.PutAttempt(at); err != nil {
				return err
			}
		}
		job, err := tx.Job(j.ID)
		if err != nil {
			return err
		}
		job.State, job.Accepted, job.Result = lifecycle.Accepted, 1, []byte(`{}`)
		return tx.PutJob(job)
	})
	mustUpdate(t, b, func(tx store.Tx) error {
		_, err := tx.RemoveJob(j.ID, time.Now())
		return err
	})
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{a.k.accepted(j.ID), a.k.jobClaim(j.ID, 1), a.k.tombstone(j.ID)} {
		resp, err := b.cli.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 || resp.Kvs[0].Lease != 0 {
			t.Errorf("%q after the job's removal and its boot's departure: %+v", k, resp.Kvs)
		}
	}
	if resp, err := b.cli.Get(ctx, a.k.job(j.ID)); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("the removed job's record: %+v %v", resp, err)
	}
}

// The neuron's and the host acts' records stay in each home's own store
// (docs/cluster.md, "Host acts stay local"): the shared store refuses
// every read and write of them.
func TestLocalRecordsRefused(t *testing.T) {
	a, _, _ := pair(t)
	calls := map[string]func(store.Tx) error{
		"Root":              func(tx store.Tx) error { _, err := tx.Root(); return err },
		"PutRoot":           func(tx store.Tx) error { return tx.PutRoot(&store.Root{}) },
		"Grant":             func(tx store.Tx) error { _, err := tx.Grant(); return err },
		"PutGrant":          func(tx store.Tx) error { return tx.PutGrant(&store.Grant{}) },
		"Prog":              func(tx store.Tx) error { _, err := tx.Prog("p"); return err },
		"CreateProg":        func(tx store.Tx) error { return tx.CreateProg(&store.Prog{}) },
		"UpgradeProg":       func(tx store.Tx) error { return tx.UpgradeProg(&store.Prog{}) },
		"ProgRevision":      func(tx store.Tx) error { _, err := tx.ProgRevision("p", 1); return err },
		"Invocation":        func(tx store.Tx) error { _, err := tx.Invocation("i"); return err },
		"CreateInvocation":  func(tx store.Tx) error { return tx.CreateInvocation(&store.Invocation{}) },
		"Children":          func(tx store.Tx) error { _, err := tx.Children("i"); return err },
		"Reserve":           func(tx store.Tx) error { return tx.Reserve(&store.Reservation{}) },
		"CreateOperation":   func(tx store.Tx) error { return tx.CreateOperation(&store.Operation{}) },
		"RecordAttempt":     func(tx store.Tx) error { return tx.RecordAttempt(&store.ActAttempt{}) },
		"RecordClaim":       func(tx store.Tx) error { return tx.RecordClaim(&store.Claim{}) },
		"RecordOutcome":     func(tx store.Tx) error { _, err := tx.RecordOutcome(&store.Outcome{}); return err },
		"ForEachInvocation": func(tx store.Tx) error { return tx.ForEachInvocation(func(*store.Invocation) bool { return true }) },
	}
	for name, call := range calls {
		if err := a.Update(context.Background(), call); !errors.Is(err, ErrLocalRecords) {
			t.Errorf("%s: %v, want ErrLocalRecords", name, err)
		}
	}
}
