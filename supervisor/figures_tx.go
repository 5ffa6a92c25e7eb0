package supervisor

import (
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// A write's changes reach the overview's figures only once it commits:
// each transaction of the supervisor's job store runs on a recordingTx
// that notes the jobs and attempts it moves, and the store wrapper
// (guardedStore) hands them to figures after the commit. A transaction
// that is run again (a batch's retry, a conflict on a shared store)
// starts its notes over.

// txChanges are one transaction's notes.
type txChanges struct {
	jobs     []jobChange
	attempts []attemptChange
}

// recorded wraps fn so that it runs on a recordingTx writing into ch,
// emptied at each run.
func (ch *txChanges) recorded(fn func(store.Tx) error) func(store.Tx) error {
	return func(tx store.Tx) error {
		ch.jobs, ch.attempts = ch.jobs[:0], ch.attempts[:0]
		return fn(&recordingTx{Tx: tx, ch: ch})
	}
}

// recordingTx is a transaction that notes its moves of jobs (their
// records) and attempts (their events). A caller that needs a capability of the driver's own
// transaction (a registration, the home's fencing records) finds it with
// txAs, which looks through the wrapper.
type recordingTx struct {
	store.Tx
	ch *txChanges
}

func (t *recordingTx) Unwrap() store.Tx { return t.Tx }

func (t *recordingTx) CreateJob(j *store.Job, spec []byte) error {
	if err := t.Tx.CreateJob(j, spec); err != nil {
		return err
	}
	t.noteJob(j, "", j.State)
	return nil
}

func (t *recordingTx) PutJob(j *store.Job) error {
	old, err := t.Tx.Job(j.ID)
	if err != nil {
		// PutJob fails the same way: there is nothing to note.
		return t.Tx.PutJob(j)
	}
	if err := t.Tx.PutJob(j); err != nil {
		return err
	}
	t.noteJob(j, old.State, j.State)
	return nil
}

func (t *recordingTx) RemoveJob(id string, removed time.Time) (*store.Tombstone, error) {
	old, err := t.Tx.Job(id)
	if err != nil {
		return t.Tx.RemoveJob(id, removed)
	}
	ts, err := t.Tx.RemoveJob(id, removed)
	if err == nil {
		t.noteJob(old, old.State, "")
	}
	return ts, err
}

// AppendEvent notes an attempt's moves by their events, which carry
// when each happened: a move recorded later than it happened (an
// attempt's steps, steps.go) is timed right.
func (t *recordingTx) AppendEvent(e store.Event) error {
	if err := t.Tx.AppendEvent(e); err != nil {
		return err
	}
	if e.Attempt != 0 && e.From != e.To {
		t.ch.attempts = append(t.ch.attempts, attemptChange{key: attemptKey{e.Job, e.Attempt}, to: e.To, at: e.Time})
	}
	return nil
}

func (t *recordingTx) noteJob(j *store.Job, from, to lifecycle.State) {
	c := jobChange{id: j.ID, from: from, to: to, created: j.Created, at: j.Updated}
	if failureState(to) {
		c.code = failureCode(j.Error)
	}
	t.ch.jobs = append(t.ch.jobs, c)
}

// txAs is tx, or the transaction a wrapper of it wraps, as a T.
func txAs[T any](tx store.Tx) (T, bool) {
	for {
		if v, ok := tx.(T); ok {
			return v, true
		}
		w, ok := tx.(interface{ Unwrap() store.Tx })
		if !ok {
			var zero T
			return zero, false
		}
		tx = w.Unwrap()
	}
}

// recordingUpdate runs write (an Update or a Batch of the store, given
// the wrapped fn) and hands its changes to figures once it committed.
func recordingUpdate(f *figures, fn func(store.Tx) error, write func(func(store.Tx) error) error) error {
	if f == nil {
		return write(fn)
	}
	var ch txChanges
	err := write(ch.recorded(fn))
	if err == nil {
		f.apply(ch.jobs, ch.attempts)
	}
	return err
}
