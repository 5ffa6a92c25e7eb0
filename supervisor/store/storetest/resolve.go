package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// ResolveUnknown: the one move of a terminal job is the operator's
// resolution of an unknown one, recorded with it: to queued with one more
// attempt granted (back in the live index), or to cancelled (then
// removable); once per attempt, its unknown attempt left as it is, never
// for another terminal state.
func ResolveUnknown(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	now := time.Unix(1800000000, 0).UTC()
	for _, id := range []string{"r-retry", "r-cancel"} {
		seedJob(t, s, id, lifecycle.Unknown)
	}
	seedJob(t, s, "r-failed", lifecycle.Failed)
	read := func(id string) *store.Job {
		var j *store.Job
		view(t, s, func(tx store.Tx) (err error) { j, err = tx.Job(id); return err })
		return j
	}
	put := func(j *store.Job) error { return update(s, func(tx store.Tx) error { return tx.PutJob(j) }) }
	resolved := func(id, as string, n uint32, state lifecycle.State, granted uint32) *store.Job {
		j := read(id)
		j.State, j.Granted = state, granted
		j.Resolved = &store.Resolution{Attempt: n, As: as, Time: now}
		return j
	}
	for name, c := range map[string]struct {
		j    *store.Job
		want error
	}{
		"no resolution":         {func() *store.Job { j := read("r-retry"); j.State = lifecycle.Queued; return j }(), store.ErrInvariant},
		"another attempt":       {resolved("r-retry", store.ResolveRetry, 2, lifecycle.Queued, 1), store.ErrInvariant},
		"retry granting none":   {resolved("r-retry", store.ResolveRetry, 1, lifecycle.Queued, 0), store.ErrInvariant},
		"retry to cancelled":    {resolved("r-retry", store.ResolveRetry, 1, lifecycle.Cancelled, 1), store.ErrInvariant},
		"cancel granting":       {resolved("r-cancel", store.ResolveCancel, 1, lifecycle.Cancelled, 1), store.ErrInvariant},
		"a failed job":          {resolved("r-failed", store.ResolveRetry, 1, lifecycle.Queued, 1), store.ErrInvariant},
		"an unknown resolution": {resolved("r-cancel", "forget", 1, lifecycle.Failed, 0), store.ErrInvariant},
	} {
		if err := put(c.j); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if err := update(s, func(tx store.Tx) error {
		j := resolved("r-retry", store.ResolveRetry, 1, lifecycle.Queued, 1)
		if err := tx.PutJob(j); err != nil {
			return err
		}
		return tx.Enqueue(j.ID, j.Priority, j.Seq)
	}); err != nil {
		t.Fatalf("resolve with a retry: %v", err)
	}
	if err := put(resolved("r-cancel", store.ResolveCancel, 1, lifecycle.Cancelled, 0)); err != nil {
		t.Fatalf("resolve with a cancel: %v", err)
	}
	view(t, s, func(tx store.Tx) error {
		live := map[string]bool{}
		if err := tx.ForEachLive(func(j *store.Job) bool { live[j.ID] = true; return true }); err != nil {
			return err
		}
		if !live["r-retry"] || live["r-cancel"] {
			t.Errorf("live after the resolutions: %v", live)
		}
		a, err := tx.Attempt("r-retry", 1)
		if err != nil || a.State != lifecycle.Unknown {
			t.Errorf("the resolved attempt: %+v %v", a, err)
		}
		return nil
	})
	// The retried job's unknown attempt never moves, and its next one
	// is a new attempt; the job is not resolved again.
	if err := update(s, func(tx store.Tx) error {
		a, err := tx.Attempt("r-retry", 1)
		if err != nil {
			return err
		}
		a.State = lifecycle.Accepted
		return tx.PutAttempt(a)
	}); !errors.Is(err, store.ErrInvariant) {
		t.Errorf("the unknown attempt of a resolved job moved: %v", err)
	}
	if err := put(resolved("r-cancel", store.ResolveCancel, 1, lifecycle.Cancelled, 0)); err != nil {
		t.Errorf("the same record again: %v", err)
	}
	back := read("r-cancel")
	back.State, back.Granted = lifecycle.Queued, 1
	back.Resolved = &store.Resolution{Attempt: 1, As: store.ResolveRetry, Time: now}
	if err := put(back); !errors.Is(err, store.ErrInvariant) {
		t.Errorf("a cancelled resolution resolved again: %v", err)
	}
	if err := update(s, func(tx store.Tx) error { _, err := tx.RemoveJob("r-cancel", now); return err }); err != nil {
		t.Errorf("remove the cancelled one: %v", err)
	}
}
