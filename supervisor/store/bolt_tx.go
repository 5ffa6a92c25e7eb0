package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

type boltTx struct {
	tx *bolt.Tx
	s  *Bolt
}

// records is one bucket of sealed records (record.go): every read checks
// the seal, every write seals.
type records struct {
	b    *bolt.Bucket
	name []byte
	file string
}

func (t *boltTx) bucket(name []byte) records {
	return records{b: t.tx.Bucket(name), name: name, file: t.s.path}
}

func (r records) damaged(key []byte, reason string) error {
	return &CorruptError{File: r.file, Bucket: string(r.name), Key: bytes.Clone(key), Reason: reason}
}

// get returns the payload stored under key, nil if there is none. It
// shares bbolt's memory: valid inside the transaction only.
func (r records) get(key []byte) ([]byte, error) {
	v := r.b.Get(key)
	if v == nil {
		return nil, nil
	}
	return r.open(key, v)
}

func (r records) open(key, value []byte) ([]byte, error) {
	p, ok := unseal(r.name, key, value)
	if !ok {
		return nil, r.damaged(key, "the record fails its checksum")
	}
	return p, nil
}

func (r records) put(key, payload []byte) error {
	return r.b.Put(key, seal(r.name, key, payload))
}

func (r records) putJSON(key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return r.put(key, raw)
}

func (r records) getJSON(key []byte, v any) error {
	raw, err := r.get(key)
	if err != nil {
		return err
	}
	if raw == nil {
		return ErrNotFound
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return r.damaged(key, "the record does not decode: "+err.Error())
	}
	return nil
}

// each visits the records whose keys start with prefix, in key order,
// until fn returns false or an error.
func (r records) each(prefix []byte, fn func(k, payload []byte) (bool, error)) error {
	c := r.b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		p, err := r.open(k, v)
		if err != nil {
			return err
		}
		more, err := fn(k, p)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// putJSON seals v's JSON into bucket b (named name): for the opening
// transaction, which works on bbolt's transaction directly.
func putJSON(b *bolt.Bucket, name, key []byte, v any) error {
	return records{b: b, name: name}.putJSON(key, v)
}

func (t *boltTx) Meta() (Meta, error) {
	var m Meta
	err := t.bucket(bucketMeta).getJSON(keyMeta, &m)
	return m, err
}

func (t *boltTx) PutMeta(m Meta) error {
	m.SchemaVersion = SchemaVersion
	return t.bucket(bucketMeta).putJSON(keyMeta, m)
}

func (t *boltTx) Job(id string) (*Job, error) {
	k := []byte(id)
	jobs := t.bucket(bucketJobs)
	raw, err := jobs.get(k)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("job %q: %w", id, ErrNotFound)
	}
	j, err := t.s.jobs.get(id, raw, true)
	if err != nil {
		return nil, jobs.damaged(k, "the record does not decode: "+err.Error())
	}
	return j, nil
}

// specDigest is the SHA-256 hex a job's spec_digest must be.
func specDigest(spec []byte) string {
	sum := sha256.Sum256(spec)
	return hex.EncodeToString(sum[:])
}

// checkSpec: a job has a spec, and its spec_digest is the spec's.
func checkSpec(spec []byte, digest string) error {
	if len(spec) == 0 {
		return fmt.Errorf("%w: a job needs its spec", ErrInvariant)
	}
	if d := specDigest(spec); digest != d {
		return fmt.Errorf("%w: spec_digest %q is not the spec's SHA-256 %s", ErrInvariant, digest, d)
	}
	return nil
}

func (t *boltTx) CreateJob(j *Job, spec []byte) error {
	if j.ID == "" || !j.State.Valid() {
		return fmt.Errorf("create job: %w: job needs an id and a valid state", ErrInvariant)
	}
	if err := checkSpec(spec, j.SpecDigest); err != nil {
		return fmt.Errorf("create job %q: %w", j.ID, err)
	}
	k := []byte(j.ID)
	jobs, specs, sub := t.bucket(bucketJobs), t.bucket(bucketSpecs), t.bucket(bucketSubmitted)
	if old, err := jobs.get(k); err != nil {
		return err
	} else if old != nil {
		return fmt.Errorf("create job %q: %w: the job exists", j.ID, ErrConflict)
	}
	if ts, err := t.bucket(bucketTombstones).get(k); err != nil {
		return err
	} else if ts != nil {
		return fmt.Errorf("create job %q: %w: %w", j.ID, ErrConflict, ErrRemoved)
	}
	if j.Seq == 0 {
		return fmt.Errorf("create job %q: %w: seq 0", j.ID, ErrInvariant)
	}
	if taken, err := sub.get(seqKey(j.Seq)); err != nil {
		return err
	} else if taken != nil {
		return fmt.Errorf("create job %q: %w: seq %d is taken", j.ID, ErrInvariant, j.Seq)
	}
	old, err := specs.get(k)
	if err != nil {
		return err
	}
	if old != nil && !bytes.Equal(old, spec) {
		return fmt.Errorf("create job %q: %w: the frozen spec is write-once", j.ID, ErrConflict)
	}
	if err := t.checkAccepted(j); err != nil {
		return err
	}
	if err := specs.put(k, spec); err != nil {
		return fmt.Errorf("create job %q: store spec: %w", j.ID, err)
	}
	if err := sub.put(seqKey(j.Seq), k); err != nil {
		return fmt.Errorf("create job %q: index: %w", j.ID, err)
	}
	return jobs.putJSON(k, j)
}

func (t *boltTx) PutJob(j *Job) error {
	if j.ID == "" || !j.State.Valid() {
		return fmt.Errorf("put job: %w: job needs an id and a valid state", ErrInvariant)
	}
	old, err := t.Job(j.ID)
	if err != nil {
		// Including not found: a job is created with its spec (CreateJob).
		return fmt.Errorf("put job: %w", err)
	}
	if old.SpecDigest != j.SpecDigest || old.Seq != j.Seq || !old.Created.Equal(j.Created) {
		return fmt.Errorf("job %q: %w: spec digest, seq and creation time are immutable", j.ID, ErrConflict)
	}
	if old.State.Terminal() && old.State != j.State {
		return fmt.Errorf("job %q: %w: terminal state %s cannot become %s", j.ID, ErrInvariant, old.State, j.State)
	}
	if old.Accepted != 0 && old.Accepted != j.Accepted {
		return fmt.Errorf("job %q: %w: attempt %d is already accepted", j.ID, ErrInvariant, old.Accepted)
	}
	if err := t.checkAccepted(j); err != nil {
		return err
	}
	return t.bucket(bucketJobs).putJSON([]byte(j.ID), j)
}

// checkAccepted: an accepted job names its attempt, and that attempt is
// the one the accepted index holds.
func (t *boltTx) checkAccepted(j *Job) error {
	if j.State == lifecycle.Accepted && j.Accepted == 0 {
		return fmt.Errorf("job %q: %w: accepted without an accepted attempt", j.ID, ErrInvariant)
	}
	if j.Accepted != 0 {
		n, ok, err := t.accepted(j.ID)
		if err != nil {
			return err
		}
		if !ok || n != j.Accepted {
			return fmt.Errorf("job %q: %w: accepted attempt %d is not recorded as accepted", j.ID, ErrInvariant, j.Accepted)
		}
	}
	return nil
}

func (t *boltTx) Spec(id string) ([]byte, error) {
	v, err := t.bucket(bucketSpecs).get([]byte(id))
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("spec of job %q: %w", id, ErrNotFound)
	}
	// bbolt's value is valid only inside the transaction.
	return bytes.Clone(v), nil
}

func (t *boltTx) ForEachJob(fn func(*Job) bool) error {
	jobs := t.bucket(bucketJobs)
	return jobs.each(nil, func(k, v []byte) (bool, error) {
		// A scan does not fill the cache: it would only push out the
		// jobs that are running.
		j, err := t.s.jobs.get(string(k), v, false)
		if err != nil {
			return false, jobs.damaged(k, "the record does not decode: "+err.Error())
		}
		return fn(j), nil
	})
}

// seqKey is a job's key in the submitted index.
func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func (t *boltTx) ForEachSubmitted(newestFirst bool, fn func(*Job) bool) error {
	sub, jobs := t.bucket(bucketSubmitted), t.bucket(bucketJobs)
	c := sub.b.Cursor()
	first, next := c.First, c.Next
	if newestFirst {
		first, next = c.Last, c.Prev
	}
	for k, v := first(); k != nil; k, v = next() {
		id, err := sub.open(k, v)
		if err != nil {
			return err
		}
		raw, err := jobs.get(id)
		if err != nil {
			return err
		}
		if raw == nil {
			return sub.damaged(k, fmt.Sprintf("names job %q, which has no record", id))
		}
		j, err := t.s.jobs.get(string(id), raw, false)
		if err != nil {
			return jobs.damaged(id, "the record does not decode: "+err.Error())
		}
		if !fn(j) {
			return nil
		}
	}
	return nil
}

func attemptKey(job string, n uint32) []byte {
	k := make([]byte, 0, len(job)+5)
	k = append(k, job...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint32(k, n)
}

func (t *boltTx) Attempt(job string, n uint32) (*Attempt, error) {
	k := attemptKey(job, n)
	attempts := t.bucket(bucketAttempts)
	raw, err := attempts.get(k)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("attempt %s/%d: %w", job, n, ErrNotFound)
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

func (t *boltTx) PutAttempt(a *Attempt) error {
	if a.N == 0 || !a.State.Valid() {
		return fmt.Errorf("%w: attempt needs a number ≥ 1 and a valid state", ErrInvariant)
	}
	job, err := t.Job(a.Job)
	if err != nil {
		return err
	}
	if job.State.Terminal() {
		return fmt.Errorf("job %q: %w: no attempt changes after the job ended %s", a.Job, ErrInvariant, job.State)
	}
	old, err := t.Attempt(a.Job, a.N)
	switch {
	case errors.Is(err, ErrNotFound):
		if a.State != lifecycle.Queued {
			return fmt.Errorf("attempt %s/%d: %w: a new attempt starts queued", a.Job, a.N, ErrInvariant)
		}
		if a.N > job.Attempts {
			return fmt.Errorf("attempt %s/%d: %w: the job has prepared only %d attempts", a.Job, a.N, ErrInvariant, job.Attempts)
		}
		gen, _, err := t.placement()
		if err != nil {
			return fmt.Errorf("attempt %s/%d: %w", a.Job, a.N, err)
		}
		if a.Generation != gen {
			return fmt.Errorf("attempt %s/%d: %w: generation %d is not the current placement %d", a.Job, a.N, ErrConflict, a.Generation, gen)
		}
	case err != nil:
		return err
	default:
		if old.Boot != a.Boot || old.Generation != a.Generation || !old.Created.Equal(a.Created) {
			return fmt.Errorf("attempt %s/%d: %w: identity is immutable", a.Job, a.N, ErrConflict)
		}
		if old.State != a.State {
			if err := lifecycle.Move(old.State, a.State); err != nil {
				return fmt.Errorf("attempt %s/%d: %w: %w", a.Job, a.N, ErrInvariant, err)
			}
		} else if old.State.Terminal() {
			return fmt.Errorf("attempt %s/%d: %w: terminal attempts are immutable", a.Job, a.N, ErrInvariant)
		}
	}
	if a.State == lifecycle.Accepted {
		n, ok, err := t.accepted(a.Job)
		if err != nil {
			return err
		}
		if ok && n != a.N {
			return fmt.Errorf("attempt %s/%d: %w: attempt %d is already accepted", a.Job, a.N, ErrInvariant, n)
		}
		if len(a.Verified) == 0 {
			return fmt.Errorf("attempt %s/%d: %w: accepted without a verification record", a.Job, a.N, ErrInvariant)
		}
		if err := t.bucket(bucketAccepted).put([]byte(a.Job), binary.BigEndian.AppendUint32(nil, a.N)); err != nil {
			return err
		}
	}
	return t.bucket(bucketAttempts).putJSON(attemptKey(a.Job, a.N), a)
}

func (t *boltTx) Attempts(job string) ([]*Attempt, error) {
	var out []*Attempt
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

func (t *boltTx) AppendEvent(e Event) error {
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

func (t *boltTx) Events(job string) ([]Event, error) {
	var out []Event
	events := t.bucket(bucketEvents)
	err := events.each(append([]byte(job), 0), func(k, v []byte) (bool, error) {
		var e Event
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

func (t *boltTx) Queued(n int) ([]string, error) {
	var out []string
	err := t.bucket(bucketQueue).each(nil, func(_, v []byte) (bool, error) {
		if len(out) >= n {
			return false, nil
		}
		out = append(out, string(v))
		return true, nil
	})
	return out, err
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
