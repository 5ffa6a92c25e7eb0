package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// TestLifecycleProperties drives the store with arbitrary sequences of
// writes — any attempt moved to any state, jobs rewritten, acceptance
// claimed, specs and job identities rewritten, restarts (close and
// reopen) — the way a buggy or racing supervisor might, from a new store
// or from a migrated v1 one, and checks after every step that no sequence
// gives two accepted attempts, an accepted attempt without a verification
// record, a job naming an unaccepted attempt, a terminal state that
// changes, or a spec, spec digest, seq or creation time that changes.
func TestLifecycleProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir := t.TempDir()
		jobs := []string{"j1", "j2", "j3"}
		ident := map[string]*Job{} // what must never change
		for i, id := range jobs {
			j := newJob(id)
			j.Seq = uint64(i + 1)
			ident[id] = j
		}
		ctx := context.Background()
		v1 := rapid.Bool().Draw(rt, "v1")
		if v1 {
			writeV1(t, dir, map[string]map[string][]byte{"jobs": {
				"j1": v1JobRecord("j1", specOf("j1"), specDigest(specOf("j1")), 1, lifecycle.Queued, 0, 0),
				"j2": v1JobRecord("j2", specOf("j2"), specDigest(specOf("j2")), 2, lifecycle.Queued, 0, 0),
				"j3": v1JobRecord("j3", specOf("j3"), specDigest(specOf("j3")), 3, lifecycle.Queued, 0, 0),
			}})
			for _, j := range ident {
				j.Created = time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)
			}
		}
		s, err := OpenBolt(dir, time.Second)
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { s.Close() }()
		seenAttempt := map[string]lifecycle.State{} // terminal states observed
		seenJob := map[string]lifecycle.State{}
		removed := map[string]bool{}
		if !v1 {
			err = s.Update(ctx, func(tx Tx) error {
				for _, id := range jobs {
					if err := create(tx, ident[id]); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				rt.Fatal(err)
			}
		}
		stateGen := rapid.SampledFrom(lifecycle.States)
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			id := rapid.SampledFrom(jobs).Draw(rt, "job")
			switch rapid.IntRange(0, 8).Draw(rt, "action") {
			case 0: // prepare an attempt
				_ = s.Update(ctx, func(tx Tx) error {
					j, err := tx.Job(id)
					if err != nil {
						return err
					}
					j.Attempts++
					if err := tx.PutJob(j); err != nil {
						return err
					}
					return tx.PutAttempt(&Attempt{Job: id, N: j.Attempts, Boot: "b", State: lifecycle.Queued})
				})
			case 1, 2: // move some attempt to some state
				n := uint32(rapid.IntRange(1, 4).Draw(rt, "n"))
				to := stateGen.Draw(rt, "to")
				verified := rapid.Bool().Draw(rt, "verified")
				_ = s.Update(ctx, func(tx Tx) error {
					a, err := tx.Attempt(id, n)
					if err != nil {
						return err
					}
					a.State = to
					if verified {
						a.Verified = []byte(`{"verifier":"cert"}`)
					}
					return tx.PutAttempt(a)
				})
			case 3: // rewrite the job: any state, maybe claim an acceptance
				to := stateGen.Draw(rt, "jobTo")
				claim := uint32(rapid.IntRange(0, 4).Draw(rt, "claim"))
				_ = s.Update(ctx, func(tx Tx) error {
					j, err := tx.Job(id)
					if err != nil {
						return err
					}
					j.State, j.Accepted = to, claim
					return tx.PutJob(j)
				})
			case 4: // a transaction that fails half-way leaves nothing
				_ = s.Update(ctx, func(tx Tx) error {
					j, err := tx.Job(id)
					if err != nil {
						return err
					}
					j.State = lifecycle.Cancelled
					if err := tx.PutJob(j); err != nil {
						return err
					}
					return fmt.Errorf("abort")
				})
			case 5: // restart
				s.Close()
				if s, err = OpenBolt(dir, time.Second); err != nil {
					rt.Fatal(err)
				}
			case 6: // create the job again, with its own spec or another
				other := rapid.Bool().Draw(rt, "otherSpec")
				err := s.Update(ctx, func(tx Tx) error {
					j, err := tx.Job(id)
					if removed[id] {
						// Its tombstone keeps the id, whatever the payload.
						c := *ident[id]
						j, err = &c, nil
					}
					if err != nil {
						return err
					}
					spec := specOf(id)
					if other {
						spec = []byte(`{"job_id":"` + id + `","other":1}`)
						j.SpecDigest = specDigest(spec)
					}
					return tx.CreateJob(j, spec)
				})
				if !errors.Is(err, ErrConflict) || removed[id] != errors.Is(err, ErrRemoved) {
					rt.Fatalf("job %s created again: %v", id, err)
				}
			case 7: // rewrite what identifies the job
				field := rapid.IntRange(0, 2).Draw(rt, "field")
				err := s.Update(ctx, func(tx Tx) error {
					j, err := tx.Job(id)
					if err != nil {
						return err
					}
					switch field {
					case 0:
						j.SpecDigest = specDigest([]byte("another spec"))
					case 1:
						j.Seq += 10
					case 2:
						j.Created = j.Created.Add(time.Nanosecond)
					}
					return tx.PutJob(j)
				})
				if !errors.Is(err, ErrConflict) && !removed[id] {
					rt.Fatalf("job %s identity rewritten (field %d): %v", id, field, err)
				}
			case 8: // retention removes the job: only once it has ended, never unknown
				var state lifecycle.State
				err := s.Update(ctx, func(tx Tx) error {
					if j, err := tx.Job(id); err == nil {
						state = j.State
					}
					_, err := tx.RemoveJob(id, time.Now())
					return err
				})
				switch {
				case removed[id]:
					if !errors.Is(err, ErrNotFound) {
						rt.Fatalf("removed job %s removed again: %v", id, err)
					}
				case state.Terminal() && state != lifecycle.Unknown:
					if err != nil {
						rt.Fatalf("ended job %s (%s) not removed: %v", id, state, err)
					}
					removed[id] = true
				default:
					if !errors.Is(err, ErrInvariant) {
						rt.Fatalf("job %s (%s) removed: %v", id, state, err)
					}
				}
			}
			checkInvariants(rt, s, jobs, ident, seenAttempt, seenJob, removed)
		}
	})
}

func checkInvariants(rt *rapid.T, s Store, jobs []string, ident map[string]*Job, seenAttempt, seenJob map[string]lifecycle.State, removed map[string]bool) {
	err := s.View(context.Background(), func(tx Tx) error {
		listed, live := map[string]bool{}, map[string]bool{}
		if err := tx.ForEachSubmitted(false, func(j *Job) bool { listed[j.ID] = true; return true }); err != nil {
			return err
		}
		if err := tx.ForEachLive(func(j *Job) bool { live[j.ID] = true; return true }); err != nil {
			return err
		}
		for _, id := range jobs {
			ts, terr := tx.Tombstone(id)
			if removed[id] {
				// Nothing of it is left but its tombstone.
				_, jerr := tx.Job(id)
				_, serr := tx.Spec(id)
				atts, _ := tx.Attempts(id)
				ev, _ := tx.Events(id)
				if !errors.Is(jerr, ErrNotFound) || !errors.Is(serr, ErrNotFound) || len(atts) != 0 || len(ev) != 0 || listed[id] {
					rt.Fatalf("removed job %s: job %v, spec %v, %d attempts, %d events, listed %v", id, jerr, serr, len(atts), len(ev), listed[id])
				}
				if terr != nil || ts.SpecDigest != ident[id].SpecDigest || ts.State != seenJob[id] {
					rt.Fatalf("removed job %s: tombstone %+v %v", id, ts, terr)
				}
				continue
			}
			if !errors.Is(terr, ErrNotFound) || !listed[id] {
				rt.Fatalf("job %s: tombstone %v, listed %v", id, terr, listed[id])
			}
			j, err := tx.Job(id)
			if err != nil {
				return err
			}
			if live[id] == j.State.Terminal() {
				rt.Fatalf("job %s is %s, live index %v", id, j.State, live[id])
			}
			spec, err := tx.Spec(id)
			if err != nil {
				return err
			}
			if string(spec) != string(specOf(id)) || specDigest(spec) != j.SpecDigest {
				rt.Fatalf("job %s: spec %q, digest %s", id, spec, j.SpecDigest)
			}
			if want := ident[id]; j.SpecDigest != want.SpecDigest || j.Seq != want.Seq || !j.Created.Equal(want.Created) {
				rt.Fatalf("job %s: identity changed: digest %s seq %d created %s, want %s %d %s",
					id, j.SpecDigest, j.Seq, j.Created, want.SpecDigest, want.Seq, want.Created)
			}
			if prev, ok := seenJob[id]; ok && prev != j.State {
				rt.Fatalf("job %s: terminal state %s became %s", id, prev, j.State)
			}
			if j.State.Terminal() {
				seenJob[id] = j.State
			}
			atts, err := tx.Attempts(id)
			if err != nil {
				return err
			}
			accepted := 0
			for _, a := range atts {
				key := fmt.Sprintf("%s/%d", id, a.N)
				if prev, ok := seenAttempt[key]; ok && prev != a.State {
					rt.Fatalf("attempt %s: terminal state %s became %s", key, prev, a.State)
				}
				if a.State.Terminal() {
					seenAttempt[key] = a.State
				}
				if a.State == lifecycle.Accepted {
					accepted++
					if len(a.Verified) == 0 {
						rt.Fatalf("attempt %s accepted without a verification record", key)
					}
				}
			}
			if accepted > 1 {
				rt.Fatalf("job %s has %d accepted attempts", id, accepted)
			}
			if j.State == lifecycle.Accepted && j.Accepted == 0 {
				rt.Fatalf("job %s is accepted without an accepted attempt", id)
			}
			if j.Accepted != 0 {
				a, err := tx.Attempt(id, j.Accepted)
				if err != nil || a.State != lifecycle.Accepted {
					rt.Fatalf("job %s names attempt %d as accepted, which is not", id, j.Accepted)
				}
			}
		}
		return nil
	})
	if err != nil {
		rt.Fatal(err)
	}
}
