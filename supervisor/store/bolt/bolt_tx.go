package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

type boltTx struct {
	tx *bbolt.Tx
	s  *Store
	// open are the buckets a read-only transaction opened already:
	// bbolt remembers them for writable transactions only, and a read
	// of the dispatch path opens the same few buckets again and again.
	open []openBucket
}

type openBucket struct {
	name []byte
	b    *bbolt.Bucket
}

// records is one bucket of sealed records (record.go): every read checks
// the seal, every write seals. The records of a fencing bucket are
// authenticated as well (authenticated.go): every read checks the tag,
// every write tags.
type records struct {
	b    *bbolt.Bucket
	name []byte
	file string
	// auth is the transaction whose store tags and checks the bucket's
	// records; nil for a bucket that is not authenticated.
	auth *boltTx
}

func (t *boltTx) bucket(name []byte) records {
	var auth *boltTx
	if isFencingBucket(name) {
		auth = t
	}
	if t.tx.Writable() {
		return records{b: t.tx.Bucket(name), name: name, file: t.s.path, auth: auth}
	}
	for _, o := range t.open {
		if bytes.Equal(o.name, name) {
			return records{b: o.b, name: name, file: t.s.path, auth: auth}
		}
	}
	b := t.tx.Bucket(name)
	if b != nil {
		t.open = append(t.open, openBucket{name: name, b: b})
	}
	return records{b: b, name: name, file: t.s.path, auth: auth}
}

func (r records) damaged(key []byte, reason string) error {
	return &store.CorruptError{File: r.file, Bucket: string(r.name), Key: bytes.Clone(key), Reason: reason}
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
	if r.auth != nil {
		return r.auth.authenticate(r.name, key, p)
	}
	return p, nil
}

func (r records) put(key, payload []byte) error {
	if r.auth != nil {
		// A copy: the tag must not be appended into the caller's memory.
		tagged, err := r.auth.tagged(r.name, key, slices.Clip(payload))
		if err != nil {
			return err
		}
		return r.b.Put(key, sealOwned(r.name, key, tagged))
	}
	return r.b.Put(key, seal(r.name, key, payload))
}

// putOwned is put for a payload the caller gives up: bbolt keeps it
// (with the tag and the checksum appended in its spare capacity when
// there is room) and nobody changes it after.
func (r records) putOwned(key, payload []byte) error {
	if r.auth != nil {
		tagged, err := r.auth.tagged(r.name, key, payload)
		if err != nil {
			return err
		}
		payload = tagged
	}
	return r.b.Put(key, sealOwned(r.name, key, payload))
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
		return store.ErrNotFound
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
func putJSON(b *bbolt.Bucket, name, key []byte, v any) error {
	return records{b: b, name: name}.putJSON(key, v)
}

func (t *boltTx) Meta() (store.Meta, error) {
	var m store.Meta
	err := t.bucket(bucketMeta).getJSON(keyMeta, &m)
	return m, err
}

func (t *boltTx) NextSeq() (uint64, error) {
	m, err := t.Meta()
	if err != nil {
		return 0, err
	}
	m.NextSeq++
	return m.NextSeq, t.PutMeta(m)
}

func (t *boltTx) PutMeta(m store.Meta) error {
	m.SchemaVersion = SchemaVersion
	return t.bucket(bucketMeta).putJSON(keyMeta, m)
}

func (t *boltTx) Job(id string) (*store.Job, error) {
	k := []byte(id)
	jobs := t.bucket(bucketJobs)
	raw, err := jobs.get(k)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("job %q: %w", id, store.ErrNotFound)
	}
	j, err := t.s.jobs.get(id, raw, true)
	if err != nil {
		return nil, jobs.damaged(k, "the record does not decode: "+err.Error())
	}
	return j, nil
}

func (t *boltTx) CreateJob(j *store.Job, spec []byte) error {
	if err := store.CheckNewJob(j, spec); err != nil {
		return err
	}
	k := []byte(j.ID)
	jobs := t.bucket(bucketJobs)
	if old, err := jobs.get(k); err != nil {
		return err
	} else if old != nil {
		return fmt.Errorf("create job %q: %w: the job exists", j.ID, store.ErrConflict)
	}
	if ts, err := t.bucket(bucketTombstones).get(k); err != nil {
		return err
	} else if ts != nil {
		return fmt.Errorf("create job %q: %w: %w", j.ID, store.ErrConflict, store.ErrRemoved)
	}
	sub := t.bucket(bucketSubmitted)
	if taken, err := sub.get(seqKey(j.Seq)); err != nil {
		return err
	} else if taken != nil {
		return fmt.Errorf("create job %q: %w: seq %d is taken", j.ID, store.ErrInvariant, j.Seq)
	}
	old, err := t.spec(k)
	if err != nil {
		return err
	}
	if old != nil && !bytes.Equal(old, spec) {
		return fmt.Errorf("create job %q: %w: the frozen spec is write-once", j.ID, store.ErrConflict)
	}
	if err := t.checkAccepted(j); err != nil {
		return err
	}
	if old == nil {
		if err := t.putSpec(k, spec); err != nil {
			return fmt.Errorf("create job %q: store spec: %w", j.ID, err)
		}
	}
	if err := sub.put(seqKey(j.Seq), k); err != nil {
		return fmt.Errorf("create job %q: index: %w", j.ID, err)
	}
	if !j.State.Terminal() {
		if err := t.bucket(bucketLive).put(k, nil); err != nil {
			return fmt.Errorf("create job %q: live index: %w", j.ID, err)
		}
	}
	return jobs.putJSON(k, j)
}

func (t *boltTx) PutJob(j *store.Job) error {
	if err := store.CheckJobRecord(j); err != nil {
		return err
	}
	old, err := t.Job(j.ID)
	if err != nil {
		// Including not found: a job is created with its spec (CreateJob).
		return fmt.Errorf("put job: %w", err)
	}
	if err := store.CheckJobUpdate(old, j); err != nil {
		return err
	}
	if err := t.checkAccepted(j); err != nil {
		return err
	}
	switch {
	case j.State.Terminal() && !old.State.Terminal():
		if err := t.tx.Bucket(bucketLive).Delete([]byte(j.ID)); err != nil {
			return fmt.Errorf("job %q: live index: %w", j.ID, err)
		}
	case !j.State.Terminal() && old.State.Terminal():
		// An unknown job resolved with a retry (checkResolution).
		if err := t.bucket(bucketLive).put([]byte(j.ID), nil); err != nil {
			return fmt.Errorf("job %q: live index: %w", j.ID, err)
		}
	}
	return t.bucket(bucketJobs).putJSON([]byte(j.ID), j)
}

// ForEachLive visits the jobs that have not ended (the live index) in id
// order until fn returns false: what a restart recovers, without reading
// every job the store ever had.
func (t *boltTx) ForEachLive(fn func(*store.Job) bool) error {
	var ids [][]byte
	if err := t.bucket(bucketLive).each(nil, func(k, _ []byte) (bool, error) {
		ids = append(ids, bytes.Clone(k))
		return true, nil
	}); err != nil {
		return err
	}
	for _, id := range ids {
		j, err := t.Job(string(id))
		if err != nil {
			return fmt.Errorf("live index: %w", err)
		}
		if j.State.Terminal() {
			return t.bucket(bucketLive).damaged(id, "names a job that has ended "+string(j.State))
		}
		if !fn(j) {
			return nil
		}
	}
	return nil
}

// checkAccepted: an accepted job names its attempt, and that attempt is
// the one the accepted index holds.
func (t *boltTx) checkAccepted(j *store.Job) error {
	var (
		n   uint32
		ok  bool
		err error
	)
	if j.Accepted != 0 {
		if n, ok, err = t.accepted(j.ID); err != nil {
			return err
		}
	}
	return store.CheckJobAccepted(j, n, ok)
}

func (t *boltTx) Spec(id string) ([]byte, error) {
	v, err := t.spec([]byte(id))
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("spec of job %q: %w", id, store.ErrNotFound)
	}
	// bbolt's value is valid only inside the transaction.
	return bytes.Clone(v), nil
}

func (t *boltTx) ForEachJob(fn func(*store.Job) bool) error {
	return t.ForEachJobFrom("", fn)
}

func (t *boltTx) ForEachJobFrom(from string, fn func(*store.Job) bool) error {
	jobs := t.bucket(bucketJobs)
	c := jobs.b.Cursor()
	for k, v := c.Seek([]byte(from)); k != nil; k, v = c.Next() {
		p, err := jobs.open(k, v)
		if err != nil {
			return err
		}
		// A scan does not fill the cache: it would only push out the
		// jobs that are running.
		j, err := t.s.jobs.get(string(k), p, false)
		if err != nil {
			return jobs.damaged(k, "the record does not decode: "+err.Error())
		}
		if !fn(j) {
			return nil
		}
	}
	return nil
}

// seqKey is a job's key in the submitted index.
func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func (t *boltTx) ForEachSubmitted(newestFirst bool, fn func(*store.Job) bool) error {
	from := uint64(0)
	if newestFirst {
		from = store.SeqNewest
	}
	return t.ForEachSubmittedFrom(from, newestFirst, fn)
}

func (t *boltTx) ForEachSubmittedFrom(from uint64, newestFirst bool, fn func(*store.Job) bool) error {
	jobs := t.bucket(bucketJobs)
	return t.walkSubmitted(from, newestFirst, func(id, raw []byte) (bool, error) {
		// A scan does not fill the cache (see ForEachJob).
		j, err := t.s.jobs.get(string(id), raw, false)
		if err != nil {
			return false, jobs.damaged(id, "the record does not decode: "+err.Error())
		}
		return fn(j), nil
	})
}

func (t *boltTx) ForEachSubmittedSummary(from uint64, newestFirst bool, fn func(*store.JobSummary) bool) error {
	jobs := t.bucket(bucketJobs)
	return t.walkSubmitted(from, newestFirst, func(id, raw []byte) (bool, error) {
		j, err := store.DecodeJobSummary(raw)
		if err != nil {
			return false, jobs.damaged(id, "the record does not decode: "+err.Error())
		}
		return fn(j), nil
	})
}

// walkSubmitted visits the submitted index from seq from (see
// ForEachSubmittedFrom) with each job's id and record, valid in the
// transaction only.
func (t *boltTx) walkSubmitted(from uint64, newestFirst bool, visit func(id, raw []byte) (bool, error)) error {
	sub, jobs := t.bucket(bucketSubmitted), t.bucket(bucketJobs)
	c := sub.b.Cursor()
	k, v := c.Seek(seqKey(from))
	next := c.Next
	if newestFirst {
		next = c.Prev
		// Seek lands on the first key ≥ from: step back unless it is from
		// itself.
		if k == nil {
			k, v = c.Last()
		} else if !bytes.Equal(k, seqKey(from)) {
			k, v = c.Prev()
		}
	}
	for ; k != nil; k, v = next() {
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
		if more, err := visit(id, raw); err != nil || !more {
			return err
		}
	}
	return nil
}
