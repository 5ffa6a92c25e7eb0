package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

var (
	bucketMeta     = []byte("meta")
	bucketJobs     = []byte("jobs")
	bucketSpecs    = []byte("specs")
	bucketAttempts = []byte("attempts")
	bucketEvents   = []byte("events")
	bucketQueue    = []byte("queue")
	bucketQueueIdx = []byte("queue_index")
	bucketAccepted = []byte("accepted")
	keyMeta        = []byte("meta")
	allBuckets     = append([][]byte{bucketMeta, bucketJobs, bucketSpecs, bucketAttempts, bucketEvents, bucketQueue, bucketQueueIdx, bucketAccepted}, fencingBuckets...)
)

// FileName is the database file inside the supervisor's home.
const FileName = "supervisor.db"

// Bolt is the local store: one bbolt file with an exclusive lock, so one
// supervisor owns a home at a time.
type Bolt struct {
	db       *bolt.DB
	path     string
	jobs     *decoded[Job]
	attempts *decoded[Attempt]
	trust    atomic.Pointer[neuron.PublicKey]
	verified verifiedCache
	batch    batcher
}

// Options of OpenBoltWith.
type Options struct {
	// LockWait is how long to wait for another process's lock.
	LockWait time.Duration
	// Trust is the neuron's public key (from the vault): every signed
	// record is checked against it when read and when written. Without
	// it, reading a signed record fails with ErrUntrusted.
	Trust *neuron.PublicKey
	// NoSync skips fsync on commit. For tests that reopen a store many
	// times: a process that dies loses nothing (the data is in the page
	// cache), a machine that dies may. Never for a home.
	NoSync bool
}

// OpenBolt opens (creating if needed) the store in dir. A second process
// on the same dir gets ErrLocked after lockWait.
func OpenBolt(dir string, lockWait time.Duration) (*Bolt, error) {
	return OpenBoltWith(dir, Options{LockWait: lockWait})
}

// OpenBoltWith is OpenBolt with options.
func OpenBoltWith(dir string, opts Options) (*Bolt, error) {
	lockWait := opts.LockWait
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create store dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	if lockWait <= 0 {
		lockWait = 50 * time.Millisecond
	}
	// No freelist sync (as etcd runs bbolt): a commit does not rewrite the
	// free-page list, which open rebuilds by scanning the pages instead;
	// the map freelist keeps that scan and allocation cheap.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockWait, NoFreelistSync: true, FreelistType: bolt.FreelistMapType, NoSync: opts.NoSync})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("open store %s: %w (is another cyber-supervisor running on this home?)", path, ErrLocked)
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Bolt{db: db, path: path, jobs: newDecoded(cloneJob), attempts: newDecoded(cloneAttempt)}
	if opts.Trust != nil {
		k := *opts.Trust
		s.trust.Store(&k)
	}
	s.batch.s = s
	if err := s.init(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *Bolt) init() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		raw := tx.Bucket(bucketMeta).Get(keyMeta)
		if raw == nil {
			m := Meta{SchemaVersion: SchemaVersion, Created: time.Now().UTC()}
			return putJSON(tx.Bucket(bucketMeta), keyMeta, m)
		}
		var m Meta
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("read store meta: %w", err)
		}
		// In the opening transaction: all of it or nothing.
		return migrate(tx, m, s.path)
	})
}

// Path of the database file.
func (s *Bolt) Path() string { return s.path }

func (s *Bolt) Close() error { return s.db.Close() }

func (s *Bolt) Update(ctx context.Context, fn func(Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error { return fn(&boltTx{tx: tx, s: s}) })
}

func (s *Bolt) View(ctx context.Context, fn func(Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(func(tx *bolt.Tx) error { return fn(&boltTx{tx: tx, s: s}) })
}

type boltTx struct {
	tx *bolt.Tx
	s  *Bolt
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return b.Put(key, raw)
}

func getJSON(b *bolt.Bucket, key []byte, v any) error {
	raw := b.Get(key)
	if raw == nil {
		return ErrNotFound
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode %s: %w", key, err)
	}
	return nil
}

func (t *boltTx) Meta() (Meta, error) {
	var m Meta
	err := getJSON(t.tx.Bucket(bucketMeta), keyMeta, &m)
	return m, err
}

func (t *boltTx) PutMeta(m Meta) error {
	m.SchemaVersion = SchemaVersion
	return putJSON(t.tx.Bucket(bucketMeta), keyMeta, m)
}

func (t *boltTx) Job(id string) (*Job, error) {
	k := []byte(id)
	raw := t.tx.Bucket(bucketJobs).Get(k)
	if raw == nil {
		return nil, fmt.Errorf("job %q: %w", id, ErrNotFound)
	}
	j, err := t.s.jobs.get(id, raw, true)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", k, err)
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
	if t.tx.Bucket(bucketJobs).Get(k) != nil {
		return fmt.Errorf("create job %q: %w: the job exists", j.ID, ErrConflict)
	}
	specs := t.tx.Bucket(bucketSpecs)
	if old := specs.Get(k); old != nil && !bytes.Equal(old, spec) {
		return fmt.Errorf("create job %q: %w: the frozen spec is write-once", j.ID, ErrConflict)
	}
	if err := t.checkAccepted(j); err != nil {
		return err
	}
	// bbolt keeps the value until the commit: not the caller's slice.
	if err := specs.Put(k, bytes.Clone(spec)); err != nil {
		return fmt.Errorf("create job %q: store spec: %w", j.ID, err)
	}
	return putJSON(t.tx.Bucket(bucketJobs), k, j)
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
	return putJSON(t.tx.Bucket(bucketJobs), []byte(j.ID), j)
}

// checkAccepted: an accepted job names its attempt, and that attempt is
// the one the accepted index holds.
func (t *boltTx) checkAccepted(j *Job) error {
	if j.State == lifecycle.Accepted && j.Accepted == 0 {
		return fmt.Errorf("job %q: %w: accepted without an accepted attempt", j.ID, ErrInvariant)
	}
	if j.Accepted != 0 {
		n, ok := t.accepted(j.ID)
		if !ok || n != j.Accepted {
			return fmt.Errorf("job %q: %w: accepted attempt %d is not recorded as accepted", j.ID, ErrInvariant, j.Accepted)
		}
	}
	return nil
}

func (t *boltTx) Spec(id string) ([]byte, error) {
	v := t.tx.Bucket(bucketSpecs).Get([]byte(id))
	if v == nil {
		return nil, fmt.Errorf("spec of job %q: %w", id, ErrNotFound)
	}
	// bbolt's value is valid only inside the transaction.
	return bytes.Clone(v), nil
}

func (t *boltTx) ForEachJob(fn func(*Job) bool) error {
	c := t.tx.Bucket(bucketJobs).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		// A scan does not fill the cache: it would only push out the
		// jobs that are running.
		j, err := t.s.jobs.get(string(k), v, false)
		if err != nil {
			return fmt.Errorf("decode job %s: %w", k, err)
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
	raw := t.tx.Bucket(bucketAttempts).Get(k)
	if raw == nil {
		return nil, fmt.Errorf("attempt %s/%d: %w", job, n, ErrNotFound)
	}
	a, err := t.s.attempts.get(string(k), raw, true)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", k, err)
	}
	return a, nil
}

func (t *boltTx) accepted(job string) (uint32, bool) {
	v := t.tx.Bucket(bucketAccepted).Get([]byte(job))
	if len(v) != 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(v), true
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
		if n, ok := t.accepted(a.Job); ok && n != a.N {
			return fmt.Errorf("attempt %s/%d: %w: attempt %d is already accepted", a.Job, a.N, ErrInvariant, n)
		}
		if len(a.Verified) == 0 {
			return fmt.Errorf("attempt %s/%d: %w: accepted without a verification record", a.Job, a.N, ErrInvariant)
		}
		if err := t.tx.Bucket(bucketAccepted).Put([]byte(a.Job), binary.BigEndian.AppendUint32(nil, a.N)); err != nil {
			return err
		}
	}
	return putJSON(t.tx.Bucket(bucketAttempts), attemptKey(a.Job, a.N), a)
}

func (t *boltTx) Attempts(job string) ([]*Attempt, error) {
	prefix := append([]byte(job), 0)
	var out []*Attempt
	c := t.tx.Bucket(bucketAttempts).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		a, err := t.s.attempts.get(string(k), v, true)
		if err != nil {
			return nil, fmt.Errorf("decode attempt %q: %w", k, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func (t *boltTx) AppendEvent(e Event) error {
	b := t.tx.Bucket(bucketEvents)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	e.Seq = seq
	k := append(append([]byte(e.Job), 0), binary.BigEndian.AppendUint64(nil, seq)...)
	return putJSON(b, k, e)
}

func (t *boltTx) Events(job string) ([]Event, error) {
	prefix := append([]byte(job), 0)
	var out []Event
	c := t.tx.Bucket(bucketEvents).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var e Event
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, fmt.Errorf("decode event %q: %w", k, err)
		}
		out = append(out, e)
	}
	return out, nil
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
	if err := t.tx.Bucket(bucketQueue).Put(k, []byte(job)); err != nil {
		return err
	}
	return t.tx.Bucket(bucketQueueIdx).Put([]byte(job), k)
}

func (t *boltTx) Dequeue(job string) error {
	idx := t.tx.Bucket(bucketQueueIdx)
	k := idx.Get([]byte(job))
	if k == nil {
		return nil
	}
	if err := t.tx.Bucket(bucketQueue).Delete(bytes.Clone(k)); err != nil {
		return err
	}
	return idx.Delete([]byte(job))
}

func (t *boltTx) Queued(n int) ([]string, error) {
	var out []string
	c := t.tx.Bucket(bucketQueue).Cursor()
	for k, v := c.First(); k != nil && len(out) < n; k, v = c.Next() {
		out = append(out, string(v))
	}
	return out, nil
}

func (t *boltTx) QueueLen() (int, error) {
	// Counted rather than read from Stats, which does not see this
	// transaction's own writes; the queue is bounded by admission.
	n := 0
	c := t.tx.Bucket(bucketQueue).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n, nil
}
