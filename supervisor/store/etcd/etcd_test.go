package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
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
	if ok, err := s.resolve(ctx, m1, nil); err != nil || !ok {
		t.Fatalf("resolve a committed write: %v %v", ok, err)
	}
	m2 := s.k.markers("x") + "2"
	if ok, err := s.resolve(ctx, m2, nil); err != nil || ok {
		t.Fatalf("resolve a write that never arrived: %v %v", ok, err)
	}
	// The original, arriving late, is refused by its own marker compare.
	resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(m2), "=", 0)).
		Then(clientv3.OpPut(s.k.job("late"), "{}"), clientv3.OpPut(m2, markerCommitted)).Commit()
	if err != nil || resp.Succeeded {
		t.Fatalf("late original: %v succeeded %v", err, resp != nil && resp.Succeeded)
	}
	if ok, err := s.resolve(ctx, m2, nil); err != nil || ok {
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
	// The registration's lease, as etcd has it (the dashboard's hosts
	// page shows its age).
	if h := hosts[0]; h.LeaseTTL < time.Second || h.LeaseLeft <= 0 || h.LeaseLeft > h.LeaseTTL {
		t.Fatalf("host lease: TTL %v, left %v", h.LeaseTTL, h.LeaseLeft)
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
	select {
	case <-m.Lost():
	case <-time.After(60 * time.Second):
		t.Fatal("the replaced boot kept its registration")
	}
	select {
	case <-m2.Lost():
		t.Fatal("the new boot lost its registration")
	default:
	}
	hosts, _ := b.Hosts(ctx)
	if len(hosts) != 1 || hosts[0].Boot != "b2" {
		t.Fatalf("hosts %+v", hosts)
	}
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

// A commit that was applied while its boot was registered, and whose
// reply was lost while the boot stalled past its lease: by the time the
// writer asks, another host has recovered the boot and deleted its
// markers (ForgetBoot). The write's missing marker then says nothing
// about it: the store answers ErrOutcomeUnknown (and ErrFenced), never
// that it did not commit (an acceptance taken for one that did not
// would throw its committed certificate away).
func TestUnknownOutcomeAfterTheBootWasRecovered(t *testing.T) {
	a, b, _ := pair(t)
	ctx := context.Background()
	m, err := a.Join(ctx, store.HostBoot{Host: "h3", Boot: "stalled"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Join(ctx, store.HostBoot{Host: "h4", Boot: "survivor"}); err != nil {
		t.Fatal(err)
	}
	a.lostReply = func() {
		a.lostReply = nil
		// The lease expires; the survivor recovers the boot.
		if _, err := b.cli.Revoke(ctx, a.member.lease); err != nil {
			t.Error(err)
		}
		if err := b.ForgetBoot(ctx, m.HostBoot().Boot); err != nil {
			t.Error(err)
		}
	}
	a.fault.Store(loseReply)
	runs := 0
	err = a.Update(ctx, func(tx store.Tx) error {
		runs++
		return storetest.Create(tx, storetest.NewJob("k1"))
	})
	if !errors.Is(err, store.ErrOutcomeUnknown) || !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a committed write whose marker was deleted: %v (fn ran %d times), want ErrOutcomeUnknown and ErrFenced", err, runs)
	}
	if runs != 1 {
		t.Errorf("fn ran %d times", runs)
	}
	_ = b.View(ctx, func(tx store.Tx) error {
		if _, err := tx.Job("k1"); err != nil {
			t.Errorf("the write did commit: %v", err)
		}
		return nil
	})
	select {
	case <-m.Lost():
	default:
		t.Error("the boot is not fenced")
	}
}

// A transaction writes in the name of the registration it compares: the
// one the handle held when the run began, even if the handle joined again
// as a new boot before the commit (the supervisor takes an attempt's boot
// and generation from Registration, never from what it last knew).
func TestTransactionKeepsItsRegistration(t *testing.T) {
	a, b, _ := pair(t)
	ctx := context.Background()
	m1, err := a.Join(ctx, store.HostBoot{Host: "h5", Boot: "first"})
	if err != nil {
		t.Fatal(err)
	}
	first := m1.HostBoot()
	j := storetest.NewJob("r1")
	j.Attempts = 1
	mustUpdate(t, a, func(tx store.Tx) error { return storetest.Create(tx, j) })
	var second store.HostBoot
	err = a.Update(ctx, func(tx store.Tx) error {
		hb, ok := tx.(store.Registered).Registration()
		if !ok || hb != first {
			t.Fatalf("registration %+v %v, the handle joined as %+v", hb, ok, first)
		}
		// The boot loses its registration and the handle joins again, as
		// a new boot, between this run's start and its commit.
		a.joined().lose("the test takes it away")
		m2, err := a.Join(ctx, store.HostBoot{Host: "h5", Boot: "second"})
		if err != nil {
			return err
		}
		second = m2.HostBoot()
		// Written in the pinned registration's name: accepted by the
		// transaction, refused by the commit (that registration is gone).
		return tx.PutAttempt(&store.Attempt{Job: "r1", N: 1, Host: hb.Host, Boot: hb.Boot, Generation: hb.Generation, State: lifecycle.Queued})
	})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a write of the replaced registration: %v, want ErrFenced", err)
	}
	if _, err := attemptOf(b, "r1", 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused write left an attempt: %v", err)
	}
	// The next run is the new boot's: its name is the one accepted.
	mustUpdate(t, a, func(tx store.Tx) error {
		hb, ok := tx.(store.Registered).Registration()
		if !ok || hb != second {
			t.Fatalf("registration %+v %v, the handle joined again as %+v", hb, ok, second)
		}
		return tx.PutAttempt(&store.Attempt{Job: "r1", N: 1, Host: hb.Host, Boot: hb.Boot, Generation: hb.Generation, State: lifecycle.Queued})
	})
	at, err := attemptOf(b, "r1", 1)
	if err != nil || at.Boot != "second" || at.Generation != second.Generation {
		t.Fatalf("attempt %+v %v, want boot second generation %d", at, err, second.Generation)
	}
}

func attemptOf(s store.Store, job string, n uint32) (*store.Attempt, error) {
	var at *store.Attempt
	err := s.View(context.Background(), func(tx store.Tx) (err error) {
		at, err = tx.Attempt(job, n)
		return err
	})
	return at, err
}

// A host id is one home's: Join replaces a live registration of the same
// host only when it is of the same home (an earlier boot, gone by the
// home's lock) or names none (an older version's), and refuses another
// home's with ErrHostInUse, replacing nothing.
func TestJoinRefusesAnotherHomesHostID(t *testing.T) {
	a, b, _ := pair(t)
	ctx := context.Background()
	m, err := a.Join(ctx, store.HostBoot{Host: "h6", Boot: "a1", Home: "m1:/srv/a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Join(ctx, store.HostBoot{Host: "h6", Boot: "b1", Home: "m2:/srv/b"}); !errors.Is(err, store.ErrHostInUse) ||
		!strings.Contains(err.Error(), "m1:/srv/a") {
		t.Fatalf("another home's join: %v, want ErrHostInUse naming m1:/srv/a", err)
	}
	hosts, err := b.Hosts(ctx)
	if err != nil || len(hosts) != 1 || hosts[0].Boot != "a1" || hosts[0].Home != "m1:/srv/a" {
		t.Fatalf("hosts after the refusal: %+v %v", hosts, err)
	}
	mustUpdate(t, a, func(tx store.Tx) error { return tx.Enqueue("still-a", 0, 1) })
	select {
	case <-m.Lost():
		t.Fatal("the refused join fenced the registered boot")
	default:
	}
	// A later boot of the same home replaces it (the first handle is
	// fenced by that).
	if _, err := b.Join(ctx, store.HostBoot{Host: "h6", Boot: "a2", Home: "m1:/srv/a"}); err != nil {
		t.Fatalf("the same home's next boot: %v", err)
	}
	if err := a.Update(ctx, func(tx store.Tx) error { return tx.Enqueue("a-replaced", 0, 2) }); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a write of the replaced boot: %v, want ErrFenced", err)
	}
	// A registration that names no home is replaced by any.
	if _, err := b.cli.Put(ctx, b.k.host("h7"), `{"host":"h7","boot":"old"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Join(ctx, store.HostBoot{Host: "h7", Boot: "new", Home: "m3:/srv/c"}); err != nil {
		t.Fatalf("replacing a registration without a home: %v", err)
	}
}

// A registration whose lease deadline has passed does not stand, even
// before the keepalive has run (a process paused past it may wake in any
// goroutine first): Standing fences the boot itself, and its writes fail.
func TestStandingFencesAPassedDeadline(t *testing.T) {
	a, _, _ := pair(t)
	ctx := context.Background()
	m, err := a.Join(ctx, store.HostBoot{Host: "h8", Boot: "b8", Home: "m:/h8"})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Standing() {
		t.Fatal("a fresh registration does not stand")
	}
	mm := m.(*member)
	mm.mu.Lock()
	mm.deadline = time.Now().Add(-time.Millisecond)
	mm.mu.Unlock()
	if m.Standing() {
		t.Fatal("a registration past its deadline stands")
	}
	select {
	case <-m.Lost():
	default:
		t.Fatal("Standing found the deadline passed and did not fence the boot")
	}
	if err := a.Update(ctx, func(tx store.Tx) error { return tx.Enqueue("late", 0, 1) }); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a write after the deadline: %v, want ErrFenced", err)
	}
}
