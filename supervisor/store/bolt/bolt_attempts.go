package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Attempts, events and the queue of the bbolt store.

func attemptKey(job string, n uint32) []byte {
	k := make([]byte, 0, len(job)+5)
	k = append(k, job...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint32(k, n)
}

func (t *boltTx) Attempt(job string, n uint32) (*store.Attempt, error) {
	k := attemptKey(job, n)
	attempts := t.bucket(bucketAttempts)
	raw, err := attempts.get(k)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("attempt %s/%d: %w", job, n, store.ErrNotFound)
	}
	a, err := t.s.attempts.get(string(k), raw, true)
	if err != nil {
		return nil, attempts.damaged(k, "the record does not decode: "+err.Error())
	}
	return a, nil
}

// accepted is the accepted index's entry for job.
func (t *boltTx) accepted(job string) (uint32, bool, error) {
	idx := t.bucket(bucketAccepted)
	v, err := idx.get([]byte(job))
	switch {
	case err != nil:
		return 0, false, err
	case v == nil:
		return 0, false, nil
	case len(v) != 4:
		return 0, false, idx.damaged([]byte(job), fmt.Sprintf("an accepted attempt of %d bytes", len(v)))
	}
	return binary.BigEndian.Uint32(v), true, nil
}

func (t *boltTx) PutAttempt(a *store.Attempt) error {
	if a.N == 0 || !a.State.Valid() {
		return store.CheckAttempt(nil, nil, a)
	}
	job, err := t.Job(a.Job)
	if err != nil {
		return err
	}
	old, err := t.Attempt(a.Job, a.N)
	switch {
	case errors.Is(err, store.ErrNotFound):
		old = nil
	case err != nil:
		return err
	}
	if err := store.CheckAttempt(job, old, a); err != nil {
		return err
	}
	if old == nil {
		// A new attempt is prepared in the current placement.
		gen, _, err := t.placement()
		if err != nil {
			return fmt.Errorf("attempt %s/%d: %w", a.Job, a.N, err)
		}
		if a.Generation != gen {
			return fmt.Errorf("attempt %s/%d: %w: generation %d is not the current placement %d", a.Job, a.N, store.ErrConflict, a.Generation, gen)
		}
	}
	if a.State == lifecycle.Accepted {
		n, ok, err := t.accepted(a.Job)
		if err != nil {
			return err
		}
		if err := store.CheckAcceptance(a, n, ok); err != nil {
			return err
		}
		if err := t.bucket(bucketAccepted).put([]byte(a.Job), binary.BigEndian.AppendUint32(nil, a.N)); err != nil {
			return err
		}
	}
	return t.bucket(bucketAttempts).putJSON(attemptKey(a.Job, a.N), a)
}

func (t *boltTx) Attempts(job string) ([]*store.Attempt, error) {
	var out []*store.Attempt
	attempts := t.bucket(bucketAttempts)
	err := attempts.each(append([]byte(job), 0), func(k, v []byte) (bool, error) {
		a, err := t.s.attempts.get(string(k), v, true)
		if err != nil {
			return false, attempts.damaged(k, "the record does not decode: "+err.Error())
		}
		out = append(out, a)
		return true, nil
	})
	return out, err
}

func eventKey(job string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(job), 0), seq)
}

func (t *boltTx) AppendEvent(e store.Event) error {
	events := t.bucket(bucketEvents)
	seq, err := events.b.NextSequence()
	if err != nil {
		return err
	}
	e.Seq = seq
	k := eventKey(e.Job, seq)
	// The sequence lives in the bucket's header, which no seal covers: a
	// damaged one must not make a new event overwrite an old one.
	if events.b.Get(k) != nil {
		return events.damaged(k, fmt.Sprintf("the events sequence %d is already used", seq))
	}
	return events.putJSON(k, e)
}

func (t *boltTx) Events(job string) ([]store.Event, error) {
	var out []store.Event
	events := t.bucket(bucketEvents)
	err := events.each(append([]byte(job), 0), func(k, v []byte) (bool, error) {
		var e store.Event
		if err := json.Unmarshal(v, &e); err != nil {
			return false, events.damaged(k, "the record does not decode: "+err.Error())
		}
		out = append(out, e)
		return true, nil
	})
	return out, err
}

// queueKey sorts higher priorities first, then lower sequence numbers.
func queueKey(priority int32, seq uint64) []byte {
	k := binary.BigEndian.AppendUint32(nil, ^(uint32(priority) ^ 1<<31))
	return binary.BigEndian.AppendUint64(k, seq)
}

func (t *boltTx) Enqueue(job string, priority int32, seq uint64) error {
	if err := t.Dequeue(job); err != nil {
		return err
	}
	k := queueKey(priority, seq)
	if err := t.bucket(bucketQueue).put(k, []byte(job)); err != nil {
		return err
	}
	return t.bucket(bucketQueueIdx).put([]byte(job), k)
}

func (t *boltTx) Dequeue(job string) error {
	idx := t.bucket(bucketQueueIdx)
	k, err := idx.get([]byte(job))
	if err != nil || k == nil {
		return err
	}
	if err := t.tx.Bucket(bucketQueue).Delete(bytes.Clone(k)); err != nil {
		return err
	}
	return idx.b.Delete([]byte(job))
}

func (t *boltTx) Queued(n int) ([]string, error) { return store.FirstQueued(t.ForEachQueued, n) }

func (t *boltTx) ForEachQueued(fn func(job string) bool) error {
	return t.bucket(bucketQueue).each(nil, func(_, v []byte) (bool, error) {
		return fn(string(v)), nil
	})
}

// ForEachUnfinished walks the live jobs' attempts.
func (t *boltTx) ForEachUnfinished(fn func(*store.Attempt) bool) error {
	var live []string
	if err := t.ForEachLive(func(j *store.Job) bool {
		live = append(live, j.ID)
		return true
	}); err != nil {
		return err
	}
	for _, id := range live {
		atts, err := t.Attempts(id)
		if err != nil {
			return err
		}
		for _, a := range atts {
			if !a.State.Terminal() && !fn(a) {
				return nil
			}
		}
	}
	return nil
}

func (t *boltTx) QueueLen() (int, error) {
	// Counted rather than read from Stats, which does not see this
	// transaction's own writes; the queue is bounded by admission. The
	// seals are checked when the entries are read (Queued).
	n := 0
	c := t.tx.Bucket(bucketQueue).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n, nil
}
