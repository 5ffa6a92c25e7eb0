package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// FrozenSpecAndTerminalJobs: a spec is written once and read back as
// written; a job's identity never changes; a terminal state never does.
func FrozenSpecAndTerminalJobs(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	j := NewJob("a")
	// The spec is the store's from the call on (Tx.CreateJob): the store
	// may write after it, in its spare capacity, but never changes it.
	spec := append(make([]byte, 0, 64), SpecOf("a")...)
	if err := update(s, func(tx store.Tx) error { return tx.CreateJob(j, spec) }); err != nil {
		t.Fatal(err)
	}
	if string(spec) != string(SpecOf("a")) {
		t.Fatalf("the store changed the caller's spec: %q", spec)
	}
	readSpec := func() []byte {
		var got []byte
		view(t, s, func(tx store.Tx) error {
			var err error
			got, err = tx.Spec("a")
			return err
		})
		return got
	}
	if got := readSpec(); string(got) != string(SpecOf("a")) {
		t.Fatalf("stored spec %q", got)
	}
	readSpec()[0] = 'Y' // a reader's copy
	if got := readSpec(); string(got) != string(SpecOf("a")) {
		t.Fatalf("a reader's change reached the store: %q", got)
	}
	other := []byte(`{"other":1}`)
	again := *j
	again.SpecDigest = store.SpecDigest(other)
	if err := update(s, func(tx store.Tx) error { return tx.CreateJob(&again, other) }); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second spec: %v", err)
	}
	if err := update(s, func(tx store.Tx) error { return Create(tx, j) }); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("job created twice: %v", err)
	}
	wrong := NewJob("w")
	wrong.SpecDigest = store.SpecDigest(other)
	if err := update(s, func(tx store.Tx) error { return Create(tx, wrong) }); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("digest of another spec: %v", err)
	}
	empty := NewJob("e")
	empty.SpecDigest = store.SpecDigest(nil)
	if err := update(s, func(tx store.Tx) error { return tx.CreateJob(empty, nil) }); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("no spec: %v", err)
	}
	if err := update(s, func(tx store.Tx) error { return tx.PutJob(NewJob("n")) }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of a job never created: %v", err)
	}
	view(t, s, func(tx store.Tx) error {
		for _, id := range []string{"w", "e", "n"} {
			if _, err := tx.Spec(id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("spec of refused job %s: %v", id, err)
			}
		}
		return nil
	})
	for name, edit := range map[string]func(*store.Job){
		"spec digest": func(c *store.Job) { c.SpecDigest = store.SpecDigest(other) },
		"seq":         func(c *store.Job) { c.Seq++ },
		"created":     func(c *store.Job) { c.Created = c.Created.Add(time.Second) },
	} {
		changed := *j
		edit(&changed)
		if err := update(s, func(tx store.Tx) error { return tx.PutJob(&changed) }); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("changed %s: %v", name, err)
		}
	}
	done := *j
	done.State = lifecycle.Failed
	if err := update(s, func(tx store.Tx) error { return tx.PutJob(&done) }); err != nil {
		t.Fatal(err)
	}
	back := done
	back.State = lifecycle.Queued
	if err := update(s, func(tx store.Tx) error { return tx.PutJob(&back) }); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("terminal job changed: %v", err)
	}
}

// AttemptInvariants: the lifecycle, immutable identity, one accepted
// attempt, terminal attempts frozen, and the job's accepted attempt.
func AttemptInvariants(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	j := NewJob("b")
	j.Attempts = 2
	a1 := &store.Attempt{Job: "b", N: 1, Host: "h1", Boot: "boot1", State: lifecycle.Queued, Created: time.Unix(1, 0).UTC()}
	a2 := &store.Attempt{Job: "b", N: 2, Host: "h1", Boot: "boot1", State: lifecycle.Queued, Created: time.Unix(2, 0).UTC()}
	err := update(s, func(tx store.Tx) error {
		if err := Create(tx, j); err != nil {
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
	skip := *a1
	skip.State = lifecycle.Accepted
	skip.Verified = []byte("{}")
	if err := update(s, func(tx store.Tx) error { return tx.PutAttempt(&skip) }); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("queued → accepted: %v", err)
	}
	for name, edit := range map[string]func(*store.Attempt){
		"boot":       func(a *store.Attempt) { a.Boot = "boot2" },
		"host":       func(a *store.Attempt) { a.Host = "h2" },
		"generation": func(a *store.Attempt) { a.Generation++ },
		"created":    func(a *store.Attempt) { a.Created = a.Created.Add(time.Second) },
	} {
		moved := *a1
		edit(&moved)
		if err := update(s, func(tx store.Tx) error { return tx.PutAttempt(&moved) }); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("changed %s: %v", name, err)
		}
	}
	walk := func(a *store.Attempt, states ...lifecycle.State) error {
		return update(s, func(tx store.Tx) error {
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
	a2.Verified = []byte(`{"ok":true}`)
	if err := walk(a2, lifecycle.Running, lifecycle.Produced, lifecycle.Verified, lifecycle.Accepted); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("second acceptance: %v", err)
	}
	view(t, s, func(tx store.Tx) error {
		got, err := tx.Attempt("b", 2)
		if err != nil || got.State != lifecycle.Queued {
			t.Fatalf("rolled-back attempt: %+v %v", got, err)
		}
		return nil
	})
	if err := walk(a1, lifecycle.Rejected); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("accepted → rejected: %v", err)
	}
	jj := *j
	jj.Accepted = 2
	if err := update(s, func(tx store.Tx) error { return tx.PutJob(&jj) }); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("job names an unaccepted attempt: %v", err)
	}
	jj.Accepted = 1
	jj.State = lifecycle.Accepted
	if err := update(s, func(tx store.Tx) error { return tx.PutJob(&jj) }); err != nil {
		t.Fatal(err)
	}
	// An ended job's attempts never change.
	a2.State = lifecycle.Failed
	if err := update(s, func(tx store.Tx) error { return tx.PutAttempt(a2) }); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("attempt of an ended job changed: %v", err)
	}
	// An attempt is created within the job's prepared attempts.
	j3 := NewJob("b3")
	if err := update(s, func(tx store.Tx) error {
		if err := Create(tx, j3); err != nil {
			return err
		}
		return tx.PutAttempt(&store.Attempt{Job: "b3", N: 1, Boot: "x", State: lifecycle.Queued})
	}); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("attempt beyond the prepared ones: %v", err)
	}
}

// AcceptanceNeedsVerification: no accepted attempt without its record.
func AcceptanceNeedsVerification(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	j := NewJob("c")
	j.Attempts = 1
	a := &store.Attempt{Job: "c", N: 1, State: lifecycle.Queued}
	err := update(s, func(tx store.Tx) error {
		if err := Create(tx, j); err != nil {
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
	if !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("accepted without verification record: %v", err)
	}
}

// RemoveJob: retention removes an ended job and everything of it, leaves
// a tombstone that keeps its id taken, refuses live and unknown jobs, and
// what is removed stays removed after a restart.
func RemoveJob(t *testing.T, b Backend) {
	s, open := b.Open(t)
	jobs := map[string]lifecycle.State{"acc": lifecycle.Accepted, "fail": lifecycle.Failed, "rej": lifecycle.Rejected,
		"canc": lifecycle.Cancelled, "unk": lifecycle.Unknown, "run": lifecycle.Running, "q": lifecycle.Queued}
	seeded := map[string]*store.Job{}
	for id, st := range jobs {
		seeded[id] = seedJob(t, s, id, st)
	}
	now := time.Unix(1800000000, 0).UTC()
	for _, id := range []string{"unk", "run", "q", "missing"} {
		err := update(s, func(tx store.Tx) error { _, err := tx.RemoveJob(id, now); return err })
		if id == "missing" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("remove %s: %v", id, err)
			}
		} else if !errors.Is(err, store.ErrInvariant) {
			t.Errorf("remove %s (%s): %v, want ErrInvariant", id, jobs[id], err)
		}
	}
	for _, id := range []string{"acc", "fail", "rej", "canc"} {
		var ts *store.Tombstone
		err := update(s, func(tx store.Tx) (err error) { ts, err = tx.RemoveJob(id, now); return err })
		if err != nil {
			t.Fatalf("remove %s: %v", id, err)
		}
		want := &store.Tombstone{ID: id, SpecDigest: seeded[id].SpecDigest, State: jobs[id], Ended: seeded[id].Updated, Removed: now}
		if !reflect.DeepEqual(ts, want) {
			t.Errorf("tombstone %+v, want %+v", ts, want)
		}
	}
	s.Close()
	s = open(t)
	t.Cleanup(func() { s.Close() })
	view(t, s, func(tx store.Tx) error {
		var listed []string
		tx.ForEachSubmitted(false, func(j *store.Job) bool { listed = append(listed, j.ID); return true })
		if len(listed) != 3 {
			t.Errorf("listed after removal: %v", listed)
		}
		for _, id := range []string{"acc", "fail", "rej", "canc"} {
			_, jerr := tx.Job(id)
			_, serr := tx.Spec(id)
			atts, _ := tx.Attempts(id)
			ev, _ := tx.Events(id)
			ts, terr := tx.Tombstone(id)
			if !errors.Is(jerr, store.ErrNotFound) || !errors.Is(serr, store.ErrNotFound) || len(atts)+len(ev) != 0 || terr != nil || ts.ID != id {
				t.Errorf("%s after removal: job %v spec %v %d attempts %d events tombstone %v", id, jerr, serr, len(atts), len(ev), terr)
			}
		}
		for _, id := range []string{"unk", "run", "q"} {
			if _, err := tx.Job(id); err != nil {
				t.Errorf("%s: %v", id, err)
			}
			if _, err := tx.Tombstone(id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s has a tombstone: %v", id, err)
			}
		}
		return nil
	})
	for _, spec := range [][]byte{SpecOf("acc"), []byte(`{"other":1}`)} {
		j := NewJob("acc")
		j.SpecDigest = store.SpecDigest(spec)
		err := update(s, func(tx store.Tx) error { return tx.CreateJob(j, spec) })
		if !errors.Is(err, store.ErrConflict) || !errors.Is(err, store.ErrRemoved) {
			t.Errorf("acc created again: %v", err)
		}
	}
}

// ForEachSubmitted lists jobs by seq, whatever their ids' order, both
// ways, and stops when told (past one read batch, too).
func ForEachSubmitted(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	ids := []string{"zeta", "alpha", "mu"}
	for _, id := range ids {
		seedJob(t, s, id, lifecycle.Queued)
	}
	view(t, s, func(tx store.Tx) error {
		for _, newest := range []bool{false, true} {
			var got []string
			tx.ForEachSubmitted(newest, func(j *store.Job) bool { got = append(got, j.ID); return true })
			want := ids
			if newest {
				want = []string{"mu", "alpha", "zeta"}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("newest first %v: %v, want %v", newest, got, want)
			}
		}
		var got []string
		tx.ForEachSubmitted(true, func(j *store.Job) bool { got = append(got, j.ID); return len(got) < 2 })
		if len(got) != 2 {
			t.Errorf("early stop: %v", got)
		}
		return nil
	})
	for b := 0; b < 150; b += 10 {
		if err := update(s, func(tx store.Tx) error {
			for i := b; i < b+10; i++ {
				if err := Create(tx, NewJob("many-"+string(rune('a'+i/26))+string(rune('a'+i%26)))); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	view(t, s, func(tx store.Tx) error {
		for _, newest := range []bool{false, true} {
			var seqs []uint64
			tx.ForEachSubmitted(newest, func(j *store.Job) bool { seqs = append(seqs, j.Seq); return true })
			if len(seqs) != 153 {
				t.Fatalf("listed %d jobs", len(seqs))
			}
			for i := 1; i < len(seqs); i++ {
				if (seqs[i-1] < seqs[i]) == newest {
					t.Fatalf("newest first %v: seq %d then %d", newest, seqs[i-1], seqs[i])
				}
			}
		}
		return nil
	})
}

// Unfinished lists exactly the attempts that have not ended.
func Unfinished(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	for id, st := range map[string]lifecycle.State{"u-run": lifecycle.Running, "u-q": lifecycle.Queued, "u-acc": lifecycle.Accepted, "u-fail": lifecycle.Failed} {
		seedJob(t, s, id, st)
	}
	view(t, s, func(tx store.Tx) error {
		got := map[string]lifecycle.State{}
		if err := tx.ForEachUnfinished(func(a *store.Attempt) bool { got[a.Job] = a.State; return true }); err != nil {
			return err
		}
		if want := map[string]lifecycle.State{"u-run": lifecycle.Running, "u-q": lifecycle.Queued}; !reflect.DeepEqual(got, want) {
			t.Fatalf("unfinished %v, want %v", got, want)
		}
		return nil
	})
}

// RollbackLeavesNothing: a transaction whose fn fails writes nothing.
func RollbackLeavesNothing(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	j := seedJob(t, s, "rb", lifecycle.Queued)
	boom := errors.New("boom")
	err := update(s, func(tx store.Tx) error {
		j2 := *j
		j2.State = lifecycle.Cancelled
		if err := tx.PutJob(&j2); err != nil {
			return err
		}
		if err := tx.Dequeue("rb"); err != nil {
			return err
		}
		if err := tx.AppendEvent(store.Event{Job: "rb", To: lifecycle.Cancelled}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("update: %v", err)
	}
	view(t, s, func(tx store.Tx) error {
		got, err := tx.Job("rb")
		if err != nil || got.State != lifecycle.Queued {
			t.Fatalf("job after rollback: %+v %v", got, err)
		}
		if q, _ := tx.Queued(5); len(q) != 1 {
			t.Fatalf("queue after rollback: %v", q)
		}
		if ev, _ := tx.Events("rb"); len(ev) != 1 {
			t.Fatalf("events after rollback: %v", ev)
		}
		return nil
	})
}

// SeqTaken: a job created with the seq of another job is refused
// (ErrInvariant), through the handle that created the other or another
// one, and nothing of it is stored.
func SeqTaken(t *testing.T, b Backend) {
	hs := handles(t, b, 2)
	first := NewJob("seq-first")
	if err := update(hs[0], func(tx store.Tx) error {
		if _, err := tx.Job(first.ID); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("job before creation: %v", err)
		}
		return Create(tx, first)
	}); err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		again := NewJob(fmt.Sprintf("seq-again-%d", i))
		again.Seq = first.Seq
		err := update(h, func(tx store.Tx) error {
			// As a submission does: the job is looked for first.
			if _, err := tx.Job(again.ID); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("job before creation: %v", err)
			}
			return Create(tx, again)
		})
		if !errors.Is(err, store.ErrInvariant) {
			t.Fatalf("handle %d: a job with a taken seq: %v, want ErrInvariant", i, err)
		}
		view(t, hs[1-i], func(tx store.Tx) error {
			if _, err := tx.Job(again.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the refused job was stored: %v", err)
			}
			if _, err := tx.Spec(again.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the refused job's spec was stored: %v", err)
			}
			return nil
		})
	}
}

// seedJob stores a job with one attempt in state st and two events.
func seedJob(t *testing.T, s store.Store, id string, st lifecycle.State) *store.Job {
	t.Helper()
	j := NewJob(id)
	err := update(s, func(tx store.Tx) error {
		if err := Create(tx, j); err != nil {
			return err
		}
		if err := tx.AppendEvent(store.Event{Job: id, Time: j.Created, To: lifecycle.Queued, Reason: "submitted"}); err != nil {
			return err
		}
		if err := tx.Enqueue(id, 0, j.Seq); err != nil {
			return err
		}
		j.Attempts = 1
		if err := tx.PutJob(j); err != nil {
			return err
		}
		a := &store.Attempt{Job: id, N: 1, Boot: "b", Created: j.Created, State: lifecycle.Queued}
		if err := tx.PutAttempt(a); err != nil {
			return err
		}
		if st == lifecycle.Queued {
			return nil
		}
		for _, s := range []lifecycle.State{lifecycle.Running, lifecycle.Produced, lifecycle.Verified} {
			if st != lifecycle.Accepted && s != lifecycle.Running {
				break
			}
			a.State = s
			if err := tx.PutAttempt(a); err != nil {
				return err
			}
		}
		switch st {
		case lifecycle.Accepted:
			a.State, a.Verified = lifecycle.Accepted, []byte(`{}`)
			j.Accepted, j.Result = 1, []byte(`{}`)
		case lifecycle.Running:
		default:
			a.State, a.Error = st, protocol.Errorf(protocol.CodeExecutionFailed, "x")
		}
		if err := tx.PutAttempt(a); err != nil {
			return err
		}
		if err := tx.Dequeue(id); err != nil {
			return err
		}
		j.State = st
		if err := tx.PutJob(j); err != nil {
			return err
		}
		return tx.AppendEvent(store.Event{Job: id, Time: j.Created, Attempt: 1, From: lifecycle.Running, To: st, Reason: "ended"})
	})
	if err != nil {
		t.Fatalf("seed %s (%s): %v", id, st, err)
	}
	return j
}
