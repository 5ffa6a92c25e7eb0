package etcd

import (
	"errors"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/storetest"
)

// An update that writes nothing commits nothing, so nothing compares
// what it read: a read answered from the handle's own last commit (the
// recent keys) must not be its answer. Here a host submitted a job,
// another ended and removed it, and the first host's resubmission (which
// writes nothing when the job exists) must find it gone, not as its own
// commit left it.
func TestNothingWrittenIsNotAnsweredFromRecentKeys(t *testing.T) {
	a, b, _ := pair(t)
	j := storetest.NewJob("r1")
	mustUpdate(t, a, func(tx store.Tx) error { return storetest.Create(tx, j) })
	mustUpdate(t, b, func(tx store.Tx) error {
		got, err := tx.Job("r1")
		if err != nil {
			return err
		}
		got.State, got.Updated = lifecycle.Cancelled, got.Updated.Add(time.Second)
		return tx.PutJob(got)
	})
	mustUpdate(t, b, func(tx store.Tx) error { _, err := tx.RemoveJob("r1", time.Now()); return err })
	var seen error
	mustUpdate(t, a, func(tx store.Tx) error {
		_, seen = tx.Job("r1")
		return nil // found: nothing to write
	})
	if !errors.Is(seen, store.ErrNotFound) {
		t.Fatalf("the removed job read back as %v, want ErrNotFound", seen)
	}
}
