package bolt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// specOf is the frozen spec the tests give job id.
func specOf(id string) []byte { return []byte(`{"job_id":"` + id + `"}`) }

// testSeq numbers the tests' jobs: every job has a seq of its own.
var testSeq atomic.Uint64

func newJob(id string) *store.Job {
	now := time.Unix(1700000000, 0).UTC()
	return &store.Job{ID: id, SpecDigest: store.SpecDigest(specOf(id)), State: lifecycle.Queued, Seq: testSeq.Add(1),
		Created: now, Updated: now, Retry: store.RetryPolicy{MaxAttempts: 1}}
}

// create stores a new job with its spec (specOf).
func create(tx store.Tx, j *store.Job) error { return tx.CreateJob(j, specOf(j.ID)) }

func update(t *testing.T, s store.Store, fn func(store.Tx) error) error {
	t.Helper()
	return s.Update(context.Background(), fn)
}

func TestExclusiveOwner(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	_, err := Open(dir, 20*time.Millisecond)
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	s.Close()
	s2, err := Open(dir, 20*time.Millisecond)
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	s2.Close()
}

// TestFreelistKeptOrNot: a store opened in turn with and without
// SyncFreelist (a one-shot run after a daemon, and back) keeps every
// record, and passes the full check after each.
func TestFreelistKeptOrNot(t *testing.T) {
	dir := t.TempDir()
	n := 0
	for round, keep := range []bool{false, true, true, false, true} {
		s, err := OpenWith(dir, Options{LockWait: 20 * time.Millisecond, SyncFreelist: keep})
		if err != nil {
			t.Fatalf("round %d (keep %v): open: %v", round, keep, err)
		}
		for range 20 {
			n++
			if err := update(t, s, func(tx store.Tx) error { return create(tx, newJob(fmt.Sprintf("job-%03d", n))) }); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i <= n; i++ {
			if err := s.View(context.Background(), func(tx store.Tx) error {
				_, err := tx.Job(fmt.Sprintf("job-%03d", i))
				return err
			}); err != nil {
				t.Fatalf("round %d (keep %v): job %d: %v", round, keep, i, err)
			}
		}
		s.Close()
		if _, err := CheckFile(filepath.Join(dir, FileName), 20*time.Millisecond); err != nil {
			t.Fatalf("round %d (keep %v): check: %v", round, keep, err)
		}
	}
}

// A store checks signed records with the Trust it was opened with: a
// key set on it is the store's.
func TestStoreTakesTrust(t *testing.T) {
	tr := store.NewTrust()
	s, err := OpenWith(t.TempDir(), Options{LockWait: time.Second, Keys: tr})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key, err := neuron.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if s.Trust() != tr || s.Trusted() != nil {
		t.Fatal("the store does not check with the trust it was given")
	}
	if err := tr.Set(key.PublicKey()); err != nil {
		t.Fatal(err)
	}
	if k := s.Trusted(); k == nil || *k != key.PublicKey() {
		t.Fatalf("the store trusts %v, the trust it was given %v", k, key.PublicKey())
	}
}
