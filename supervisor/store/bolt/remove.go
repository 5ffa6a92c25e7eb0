package bolt

import (
	"bytes"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// RemoveJob deletes an ended job and everything of it (spec, attempts and
// their claims, events, queue, accepted and submitted index entries) and writes its
// tombstone, in the caller's transaction. A job that has not ended, or
// ended unknown (its outcome is for an operator to look at), is refused
// with ErrInvariant.
func (t *boltTx) RemoveJob(id string, removed time.Time) (*store.Tombstone, error) {
	j, err := t.Job(id)
	if err != nil {
		return nil, fmt.Errorf("remove job: %w", err)
	}
	if err := store.CheckRemovable(j); err != nil {
		return nil, err
	}
	k := []byte(id)
	if err := t.Dequeue(id); err != nil {
		return nil, err
	}
	for _, b := range [][]byte{bucketAttempts, bucketEvents, bucketJobClaims} {
		if err := deletePrefix(t.tx.Bucket(b), append(bytes.Clone(k), 0)); err != nil {
			return nil, fmt.Errorf("remove job %q: %s: %w", id, b, err)
		}
	}
	if err := t.deleteSpec(k); err != nil {
		return nil, fmt.Errorf("remove job %q: %s: %w", id, bucketSpecs, err)
	}
	for _, del := range []struct {
		bucket, key []byte
	}{{bucketAccepted, k}, {bucketSubmitted, seqKey(j.Seq)}, {bucketJobs, k}} {
		if err := t.tx.Bucket(del.bucket).Delete(del.key); err != nil {
			return nil, fmt.Errorf("remove job %q: %s: %w", id, del.bucket, err)
		}
	}
	ts := store.TombstoneOf(j, removed)
	if err := t.bucket(bucketTombstones).putJSON(k, ts); err != nil {
		return nil, fmt.Errorf("remove job %q: tombstone: %w", id, err)
	}
	return ts, nil
}

// deletePrefix deletes every key of b that starts with prefix.
func deletePrefix(b *bbolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func (t *boltTx) Tombstone(id string) (*store.Tombstone, error) {
	var ts store.Tombstone
	if err := t.bucket(bucketTombstones).getJSON([]byte(id), &ts); err != nil {
		return nil, fmt.Errorf("tombstone of %q: %w", id, err)
	}
	return &ts, nil
}
