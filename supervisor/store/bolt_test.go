package store

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

func open(t *testing.T, dir string) *Bolt {
	t.Helper()
	s, err := OpenBolt(dir, 20*time.Millisecond)
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

func newJob(id string) *Job {
	now := time.Unix(1700000000, 0).UTC()
	return &Job{ID: id, SpecDigest: specDigest(specOf(id)), State: lifecycle.Queued, Seq: testSeq.Add(1),
		Created: now, Updated: now, Retry: RetryPolicy{MaxAttempts: 1}}
}

// create stores a new job with its spec (specOf).
func create(tx Tx, j *Job) error { return tx.CreateJob(j, specOf(j.ID)) }

func update(t *testing.T, s Store, fn func(Tx) error) error {
	t.Helper()
	return s.Update(context.Background(), fn)
}

func TestExclusiveOwner(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	_, err := OpenBolt(dir, 20*time.Millisecond)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	s.Close()
	s2, err := OpenBolt(dir, 20*time.Millisecond)
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	s2.Close()
}

func TestFrozenSpecAndTerminalJobs(t *testing.T) {
	s := open(t, t.TempDir())
	j := newJob("a")
	spec := specOf("a")
	if err := update(t, s, func(tx Tx) error {
		if err := tx.CreateJob(j, spec); err != nil {
			return err
		}
		spec[0] = 'X' // the caller's slice, changed before the commit
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	readSpec := func() []byte {
		var got []byte
		if err := s.View(context.Background(), func(tx Tx) error {
			var err error
			got, err = tx.Spec("a")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := readSpec(); string(got) != string(specOf("a")) {
		t.Fatalf("stored spec %q", got)
	}
	readSpec()[0] = 'Y' // a reader's copy
	if got := readSpec(); string(got) != string(specOf("a")) {
		t.Fatalf("a reader's change reached the store: %q", got)
	}
	// The spec is written once: not again, neither with other bytes nor
	// with the same.
	other := []byte(`{"other":1}`)
	again := *j
	again.SpecDigest = specDigest(other)
	if err := update(t, s, func(tx Tx) error { return tx.CreateJob(&again, other) }); !errors.Is(err, ErrConflict) {
		t.Fatalf("second spec: %v", err)
	}
	if err := update(t, s, func(tx Tx) error { return create(tx, j) }); !errors.Is(err, ErrConflict) {
		t.Fatalf("job created twice: %v", err)
	}
	// The digest is the spec's, and a job has a spec.
	wrong := newJob("w")
	wrong.SpecDigest = specDigest(other)
	if err := update(t, s, func(tx Tx) error { return create(tx, wrong) }); !errors.Is(err, ErrInvariant) {
		t.Fatalf("digest of another spec: %v", err)
	}
	empty := newJob("e")
	empty.SpecDigest = specDigest(nil)
	if err := update(t, s, func(tx Tx) error { return tx.CreateJob(empty, nil) }); !errors.Is(err, ErrInvariant) {
		t.Fatalf("no spec: %v", err)
	}
	// A job is created with its spec, never by an update.
	if err := update(t, s, func(tx Tx) error { return tx.PutJob(newJob("n")) }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of a job never created: %v", err)
	}
	_ = s.View(context.Background(), func(tx Tx) error {
		for _, id := range []string{"w", "e", "n"} {
			if _, err := tx.Spec(id); !errors.Is(err, ErrNotFound) {
				t.Fatalf("spec of refused job %s: %v", id, err)
			}
		}
		return nil
	})
	// What identifies the job never changes.
	for name, edit := range map[string]func(*Job){
		"spec digest": func(c *Job) { c.SpecDigest = specDigest(other) },
		"seq":         func(c *Job) { c.Seq++ },
		"created":     func(c *Job) { c.Created = c.Created.Add(time.Second) },
	} {
		changed := *j
		edit(&changed)
		if err := update(t, s, func(tx Tx) error { return tx.PutJob(&changed) }); !errors.Is(err, ErrConflict) {
			t.Fatalf("changed %s: %v", name, err)
		}
	}
	done := *j
	done.State = lifecycle.Failed
	if err := update(t, s, func(tx Tx) error { return tx.PutJob(&done) }); err != nil {
		t.Fatal(err)
	}
	back := done
	back.State = lifecycle.Queued
	if err := update(t, s, func(tx Tx) error { return tx.PutJob(&back) }); !errors.Is(err, ErrInvariant) {
		t.Fatalf("terminal job changed: %v", err)
	}
}

func TestAttemptInvariants(t *testing.T) {
	s := open(t, t.TempDir())
	j := newJob("b")
	j.Attempts = 2
	a1 := &Attempt{Job: "b", N: 1, Boot: "boot1", State: lifecycle.Queued, Created: time.Unix(1, 0).UTC()}
	a2 := &Attempt{Job: "b", N: 2, Boot: "boot1", State: lifecycle.Queued, Created: time.Unix(2, 0).UTC()}
	err := update(t, s, func(tx Tx) error {
		if err := create(tx, j); err != nil {
			return err
		}
		if err := tx.PutAttempt(a1); err != nil {
			return err
		}
		return tx.PutAttempt(a2)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Skipping the lifecycle is refused.
	skip := *a1
	skip.State = lifecycle.Accepted
	skip.Verified = []byte("{}")
	if err := update(t, s, func(tx Tx) error { return tx.PutAttempt(&skip) }); !errors.Is(err, ErrInvariant) {
		t.Fatalf("queued → accepted: %v", err)
	}
	// Identity is immutable.
	moved := *a1
	moved.Boot = "boot2"
	if err := update(t, s, func(tx Tx) error { return tx.PutAttempt(&moved) }); !errors.Is(err, ErrConflict) {
		t.Fatalf("changed boot: %v", err)
	}
	walk := func(a *Attempt, states ...lifecycle.State) error {
		return update(t, s, func(tx Tx) error {
			for _, st := range states {
				a.State = st
				if err := tx.PutAttempt(a); err != nil {
					return err
				}
			}
			return nil
		})
	}
	a1.Verified = []byte(`{"ok":true}`)
	if err := walk(a1, lifecycle.Running, lifecycle.Produced, lifecycle.Verified, lifecycle.Accepted); err != nil {
		t.Fatal(err)
	}
	// A second accepted attempt is refused, even through a full walk.
	a2.Verified = []byte(`{"ok":true}`)
	if err := walk(a2, lifecycle.Running, lifecycle.Produced, lifecycle.Verified, lifecycle.Accepted); !errors.Is(err, ErrInvariant) {
		t.Fatalf("second acceptance: %v", err)
	}
	// And the failed transaction left nothing behind.
	_ = s.View(context.Background(), func(tx Tx) error {
		got, err := tx.Attempt("b", 2)
		if err != nil || got.State != lifecycle.Queued {
			t.Fatalf("rolled-back attempt: %+v %v", got, err)
		}
		return nil
	})
	// Terminal attempts never change.
	if err := walk(a1, lifecycle.Rejected); !errors.Is(err, ErrInvariant) {
		t.Fatalf("accepted → rejected: %v", err)
	}
	// The job records the accepted attempt only if the attempt is accepted.
	jj := *j
	jj.Accepted = 2
	if err := update(t, s, func(tx Tx) error { return tx.PutJob(&jj) }); !errors.Is(err, ErrInvariant) {
		t.Fatalf("job names an unaccepted attempt: %v", err)
	}
	jj.Accepted = 1
	jj.State = lifecycle.Accepted
	if err := update(t, s, func(tx Tx) error { return tx.PutJob(&jj) }); err != nil {
		t.Fatal(err)
	}
}

func TestAcceptanceNeedsVerification(t *testing.T) {
	s := open(t, t.TempDir())
	j := newJob("c")
	j.Attempts = 1
	a := &Attempt{Job: "c", N: 1, State: lifecycle.Queued}
	err := update(t, s, func(tx Tx) error {
		if err := create(tx, j); err != nil {
			return err
		}
		for _, st := range []lifecycle.State{lifecycle.Queued, lifecycle.Running, lifecycle.Produced, lifecycle.Verified, lifecycle.Accepted} {
			a.State = st
			if err := tx.PutAttempt(a); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, ErrInvariant) {
		t.Fatalf("accepted without verification record: %v", err)
	}
}

func TestQueueOrderAndEvents(t *testing.T) {
	s := open(t, t.TempDir())
	err := update(t, s, func(tx Tx) error {
		for _, q := range []struct {
			id  string
			pri int32
			seq uint64
		}{{"low1", -5, 1}, {"mid1", 0, 2}, {"high", 7, 3}, {"mid2", 0, 4}, {"low2", -5, 5}} {
			if err := tx.Enqueue(q.id, q.pri, q.seq); err != nil {
				return err
			}
		}
		if err := tx.Dequeue("mid2"); err != nil {
			return err
		}
		// Re-enqueue moves, not duplicates.
		return tx.Enqueue("low1", -5, 9)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.View(context.Background(), func(tx Tx) error {
		got, _ := tx.Queued(10)
		want := []string{"high", "mid1", "low2", "low1"}
		if len(got) != len(want) {
			t.Fatalf("queue %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("queue %v, want %v", got, want)
			}
		}
		if n, _ := tx.QueueLen(); n != 4 {
			t.Fatalf("queue length %d", n)
		}
		return nil
	})
	err = update(t, s, func(tx Tx) error {
		for i := range 3 {
			if err := tx.AppendEvent(Event{Job: "x", To: lifecycle.Queued, Reason: string(rune('a' + i))}); err != nil {
				return err
			}
		}
		return tx.AppendEvent(Event{Job: "xy", To: lifecycle.Queued})
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.View(context.Background(), func(tx Tx) error {
		ev, _ := tx.Events("x")
		if len(ev) != 3 || ev[0].Reason != "a" || ev[2].Reason != "c" || ev[0].Seq >= ev[1].Seq {
			t.Fatalf("events %+v", ev)
		}
		return nil
	})
}
