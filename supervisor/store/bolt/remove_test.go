package bolt

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// seedJob stores a job with one attempt in state st and two events.
func seedJob(t *testing.T, s store.Store, id string, st lifecycle.State) *store.Job {
	t.Helper()
	j := newJob(id)
	err := update(t, s, func(tx store.Tx) error {
		if err := create(tx, j); err != nil {
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
		a.State = lifecycle.Running
		if err := tx.PutAttempt(a); err != nil {
			return err
		}
		switch st {
		case lifecycle.Accepted:
			a.State = lifecycle.Produced
			if err := tx.PutAttempt(a); err != nil {
				return err
			}
			a.State = lifecycle.Verified
			if err := tx.PutAttempt(a); err != nil {
				return err
			}
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

// TestRemoveJob: retention removes an ended job and everything of it,
// leaves a tombstone that keeps its id taken, and refuses live and
// unknown jobs; other jobs are untouched.
func TestRemoveJob(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	jobs := map[string]lifecycle.State{"acc": lifecycle.Accepted, "fail": lifecycle.Failed, "rej": lifecycle.Rejected,
		"canc": lifecycle.Cancelled, "unk": lifecycle.Unknown, "run": lifecycle.Running, "q": lifecycle.Queued}
	seeded := map[string]*store.Job{}
	for id, st := range jobs {
		seeded[id] = seedJob(t, s, id, st)
	}
	keep := dumpOpen(t, s)
	now := time.Unix(1800000000, 0).UTC()
	for _, id := range []string{"unk", "run", "q", "missing"} {
		err := update(t, s, func(tx store.Tx) error { _, err := tx.RemoveJob(id, now); return err })
		if want := store.ErrInvariant; id == "missing" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("remove %s: %v", id, err)
			}
		} else if !errors.Is(err, want) {
			t.Errorf("remove %s (%s): %v, want ErrInvariant", id, jobs[id], err)
		}
	}
	if after := dumpOpen(t, s); !reflect.DeepEqual(after, keep) {
		t.Fatal("a refused removal changed the store")
	}
	for _, id := range []string{"acc", "fail", "rej", "canc"} {
		var ts *store.Tombstone
		err := update(t, s, func(tx store.Tx) (err error) { ts, err = tx.RemoveJob(id, now); return err })
		if err != nil {
			t.Fatalf("remove %s: %v", id, err)
		}
		want := &store.Tombstone{ID: id, SpecDigest: seeded[id].SpecDigest, State: jobs[id], Ended: seeded[id].Updated, Removed: now}
		if !reflect.DeepEqual(ts, want) {
			t.Errorf("tombstone %+v, want %+v", ts, want)
		}
	}
	if rep, err := s.Check(context.Background()); err != nil || len(rep.Problems) != 0 || rep.Tombstones != 4 || rep.Jobs != 3 {
		t.Fatalf("check after removals: %+v %v", rep, err)
	}
	s.Close()
	s = open(t, dir) // what is removed stays removed
	_ = s.View(context.Background(), func(tx store.Tx) error {
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
			if _, ok, _ := tx.(*boltTx).accepted(id); ok {
				t.Errorf("%s: accepted index entry left", id)
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
	// The id is never created again, with its payload or another.
	for _, spec := range [][]byte{specOf("acc"), []byte(`{"other":1}`)} {
		j := newJob("acc")
		j.SpecDigest = store.SpecDigest(spec)
		err := update(t, s, func(tx store.Tx) error { return tx.CreateJob(j, spec) })
		if !errors.Is(err, store.ErrConflict) || !errors.Is(err, store.ErrRemoved) {
			t.Errorf("acc created again: %v", err)
		}
	}
}
