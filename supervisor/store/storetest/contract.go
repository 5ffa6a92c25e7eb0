package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// MetaAndSeq: the meta record a store is opened with reads back what
// PutMeta wrote, and survives a restart; NextSeq hands out a seq above
// every one of the transactions that committed before.
func MetaAndSeq(t *testing.T, b Backend) {
	s, open := b.Open(t)
	var m store.Meta
	view(t, s, func(tx store.Tx) (err error) { m, err = tx.Meta(); return err })
	if m.Created.IsZero() {
		t.Fatalf("the meta record of a new store: %+v", m)
	}
	m.Boot, m.Boots = "boot-meta", m.Boots+3
	if err := update(s, func(tx store.Tx) error { return tx.PutMeta(m) }); err != nil {
		t.Fatal(err)
	}
	if !b.Shared {
		s.Close()
		s = open(t)
		t.Cleanup(func() { s.Close() })
	}
	view(t, s, func(tx store.Tx) error {
		got, err := tx.Meta()
		if err != nil {
			return err
		}
		if got.Boot != m.Boot || got.Boots != m.Boots || !got.Created.Equal(m.Created) {
			return fmt.Errorf("meta %+v, put %+v", got, m)
		}
		return nil
	})
	var last uint64
	for i := range 5 {
		j := NewJob(fmt.Sprintf("seq-%d", i))
		err := update(s, func(tx store.Tx) error {
			seq, err := tx.NextSeq()
			if err != nil {
				return err
			}
			if seq <= last {
				return fmt.Errorf("seq %d after %d", seq, last)
			}
			j.Seq = seq
			return Create(tx, j)
		})
		if err != nil {
			t.Fatal(err)
		}
		last = j.Seq
	}
}

// ForEachJob visits every job in id order, removed ones not, and stops
// when told.
func ForEachJob(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	ids := []string{"fe-c", "fe-a", "fe-d", "fe-b"}
	if err := update(s, func(tx store.Tx) error {
		for _, id := range ids {
			if err := Create(tx, NewJob(id)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seedJob(t, s, "fe-e", lifecycle.Failed)
	if err := update(s, func(tx store.Tx) error { _, err := tx.RemoveJob("fe-e", time.Unix(1700000100, 0).UTC()); return err }); err != nil {
		t.Fatal(err)
	}
	var seen []string
	view(t, s, func(tx store.Tx) error {
		return tx.ForEachJob(func(j *store.Job) bool { seen = append(seen, j.ID); return true })
	})
	if want := []string{"fe-a", "fe-b", "fe-c", "fe-d"}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("visited %v, want %v", seen, want)
	}
	seen = nil
	view(t, s, func(tx store.Tx) error {
		return tx.ForEachJob(func(j *store.Job) bool { seen = append(seen, j.ID); return len(seen) < 2 })
	})
	if len(seen) != 2 {
		t.Fatalf("visited %v after being told to stop at 2", seen)
	}
}

// Batch: concurrent Batch calls all commit, each seeing what it wrote;
// one that fails commits nothing and fails no other.
func Batch(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			j := NewJob(fmt.Sprintf("batch-%d", i))
			errs[i] = s.Batch(context.Background(), func(tx store.Tx) error {
				if err := Create(tx, j); err != nil {
					return err
				}
				if i == 3 {
					return errBatchRefused
				}
				return nil
			})
		})
	}
	wg.Wait()
	view(t, s, func(tx store.Tx) error {
		for i := range n {
			_, err := tx.Job(fmt.Sprintf("batch-%d", i))
			switch {
			case i == 3:
				if !errors.Is(errs[i], errBatchRefused) || !errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("the failing batch call: %v, its job: %v", errs[i], err)
				}
			case errs[i] != nil || err != nil:
				return fmt.Errorf("batch call %d: %v, its job: %v", i, errs[i], err)
			}
		}
		return nil
	})
}

var errBatchRefused = errors.New("refused by the test")

// claimWorker is the worker descriptor the suite's job claims carry.
func claimWorker() protocol.WorkerDescriptor {
	return protocol.WorkerDescriptor{Machine: protocol.MachineNox, Environment: protocol.EnvPublicStateless,
		ProofProfile: protocol.ProfileNone, Network: "local",
		Executor: protocol.Executor{Warrior: protocol.WarriorNoxWorker, Version: "test", Backend: protocol.BackendProcess,
			WorkerID: "attempt-1", DeviceID: "test-device", BootID: "boot1"},
		MaxArgumentBytes: protocol.MaxArgumentBytesLimit, Acts: []uint64{}}
}

// JobClaims: an attempt's claim is written once, for an attempt that
// exists and has not ended, in the generation it was prepared in, with a
// valid worker, and reads back as written.
func JobClaims(t *testing.T, b Backend) {
	s, open := b.Open(t)
	j := NewJob("claimed")
	j.Attempts = 1
	at := &store.Attempt{Job: j.ID, N: 1, Host: "h1", Boot: "boot1", State: lifecycle.Queued, Created: time.Unix(1, 0).UTC()}
	if err := update(s, func(tx store.Tx) error {
		if err := Create(tx, j); err != nil {
			return err
		}
		return tx.PutAttempt(at)
	}); err != nil {
		t.Fatal(err)
	}
	claim := func(n uint32, gen uint64) *store.JobClaim {
		return &store.JobClaim{Job: j.ID, Attempt: n, Generation: gen, Worker: claimWorker(), Created: time.Unix(2, 0).UTC()}
	}
	record := func(c *store.JobClaim) error {
		return update(s, func(tx store.Tx) error { return tx.RecordJobClaim(c) })
	}
	view(t, s, func(tx store.Tx) error {
		if _, err := tx.JobClaim(j.ID, 1); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("the claim of an unclaimed attempt: %v", err)
		}
		return nil
	})
	if err := record(claim(2, 0)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a claim of an attempt that does not exist: %v", err)
	}
	if err := record(claim(1, 1)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a claim in another generation than its attempt's: %v", err)
	}
	bad := claim(1, 0)
	bad.Worker.Executor.BootID = ""
	if err := record(bad); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("a claim with an invalid worker: %v", err)
	}
	want := claim(1, 0)
	if err := record(want); err != nil {
		t.Fatal(err)
	}
	if err := record(claim(1, 0)); !errors.Is(err, store.ErrClaimed) {
		t.Fatalf("a second claim: %v", err)
	}
	if !b.Shared {
		s.Close()
		s = open(t)
		t.Cleanup(func() { s.Close() })
	}
	view(t, s, func(tx store.Tx) error {
		got, err := tx.JobClaim(j.ID, 1)
		if err != nil {
			return err
		}
		if got.Job != want.Job || got.Attempt != want.Attempt || got.Generation != want.Generation ||
			!reflect.DeepEqual(got.Worker, want.Worker) || !got.Created.Equal(want.Created) {
			return fmt.Errorf("claim %+v, wrote %+v", got, want)
		}
		return nil
	})
	// An ended attempt is never claimed.
	seedJob(t, s, "claimed-ended", lifecycle.Failed)
	c := claim(1, 0)
	c.Job = "claimed-ended"
	if err := update(s, func(tx store.Tx) error { return tx.RecordJobClaim(c) }); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("a claim of an ended attempt: %v", err)
	}
}
