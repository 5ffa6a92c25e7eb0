package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// SchemaVersion is written in the meta bucket. Stores of versions 1 to 7
// are migrated when opened (migrate.go); any other version is refused
// rather than misread. Version 3 seals every record (record.go); version
// 4 adds the submitted index and the tombstones of removed jobs; version
// 5 the records of local dispatch and fencing (docs/fencing.md); version
// 6 prog revisions and invocation children; version 7 authenticates
// every fencing record (authenticated.go); version 8 keeps a large spec
// in a bucket of its own (specs.go). See docs/store.md.
const SchemaVersion = 8

// migrateStep, when set (by tests), runs after each job is migrated; an
// error aborts the migration.
var migrateStep func(job string) error

// v1Job is a schema 1 job record: the v2 record with the frozen spec in
// it (base64 in JSON).
type v1Job struct {
	store.Job
	Spec []byte `json:"spec"`
}

// migrateV1 turns a schema 1 store into schema 2 inside tx, the opening
// transaction: every job's spec moves to the specs bucket, as raw bytes,
// and its record is rewritten without it; then the version becomes 2. An
// error, or the process dying before the commit, leaves the store at
// schema 1, untouched. A spec that does not hash to its job's
// spec_digest stops the migration: the store is not opened on a broken
// record.
func migrateV1(tx *bbolt.Tx, m store.Meta) error {
	jobs, specs := tx.Bucket(bucketJobs), tx.Bucket(bucketSpecs)
	// Keys first: a bucket is not written while a cursor walks it.
	var ids [][]byte
	if err := jobs.ForEach(func(k, _ []byte) error {
		ids = append(ids, bytes.Clone(k))
		return nil
	}); err != nil {
		return fmt.Errorf("list jobs: %w", err)
	}
	for _, k := range ids {
		var old v1Job
		if err := json.Unmarshal(jobs.Get(k), &old); err != nil {
			return fmt.Errorf("decode job %q: %w", k, err)
		}
		if old.ID != string(k) {
			return fmt.Errorf("job %q: %w: the record names job %q", k, store.ErrInvariant, old.ID)
		}
		if err := store.CheckSpec(old.Spec, old.SpecDigest); err != nil {
			return fmt.Errorf("job %q: %w", k, err)
		}
		if err := specs.Put(k, old.Spec); err != nil {
			return fmt.Errorf("job %q: store spec: %w", k, err)
		}
		raw, err := json.Marshal(&old.Job)
		if err != nil {
			return fmt.Errorf("job %q: encode: %w", k, err)
		}
		if err := jobs.Put(k, raw); err != nil {
			return fmt.Errorf("job %q: rewrite: %w", k, err)
		}
		if migrateStep != nil {
			if err := migrateStep(string(k)); err != nil {
				return err
			}
		}
	}
	m.SchemaVersion = 2
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode meta: %w", err)
	}
	if err := tx.Bucket(bucketMeta).Put(keyMeta, raw); err != nil {
		return fmt.Errorf("write meta: %w", err)
	}
	return nil
}

// migrate brings a store of schema m.SchemaVersion (1 to 7) to
// SchemaVersion inside tx, one step after the other.
func migrate(tx *bbolt.Tx, m store.Meta) error {
	if m.SchemaVersion == 1 {
		if err := migrateV1(tx, m); err != nil {
			return err
		}
		m.SchemaVersion = 2
	}
	if m.SchemaVersion == 2 {
		if err := migrateV2(tx, m); err != nil {
			return err
		}
		m.SchemaVersion = 3
	}
	if m.SchemaVersion == 3 {
		if err := migrateV3(tx, m); err != nil {
			return err
		}
		m.SchemaVersion = 4
	}
	if m.SchemaVersion == 4 {
		if err := migrateV4(tx, m); err != nil {
			return err
		}
		m.SchemaVersion = 5
	}
	if m.SchemaVersion == 5 {
		if err := migrateV5(tx, m); err != nil {
			return err
		}
		m.SchemaVersion = 6
	}
	if m.SchemaVersion == 6 {
		if err := migrateV6(tx, m); err != nil {
			return err
		}
		m.SchemaVersion = 7
	}
	return migrateV7(tx, m)
}

// migrateV7 turns a schema 7 store into schema 8, where a large spec is
// a bucket of its own (specs.go). No record is rewritten: a schema 7
// spec is a record of the specs bucket, which schema 8 reads as well,
// and a store of large verify jobs would otherwise be written again
// whole in the opening transaction. Its large specs share leaves until
// their jobs are removed.
func migrateV7(tx *bbolt.Tx, m store.Meta) error {
	if migrateStep != nil {
		if err := migrateStep(""); err != nil {
			return err
		}
	}
	m.SchemaVersion = 8
	return putJSON(tx.Bucket(bucketMeta), bucketMeta, keyMeta, m)
}

// migrateV6 turns a schema 6 store into schema 7, whose fencing records
// carry authentication tags under the neuron's record key. Opening a
// store needs no key, so nothing is rewritten here: the records stay
// without tags, the root says so (it has no Records), and the first
// start with the neuron's key tags them all in one transaction
// (AuthenticateRecords, authenticate_legacy.go). Until then they are
// read as before.
func migrateV6(tx *bbolt.Tx, m store.Meta) error {
	if migrateStep != nil {
		if err := migrateStep(""); err != nil {
			return err
		}
	}
	m.SchemaVersion = 7
	return putJSON(tx.Bucket(bucketMeta), bucketMeta, keyMeta, m)
}

// migrateV5 turns a schema 5 store into schema 6, which adds superseded
// prog revisions and the children index: their buckets are created
// empty by the opening transaction. No record is rewritten: a schema 5
// prog is at its first revision, and a schema 5 invocation is top-level
// with nothing delegated (the fields that say otherwise are absent).
func migrateV5(tx *bbolt.Tx, m store.Meta) error {
	for _, name := range schema6Buckets {
		if b := tx.Bucket(name); b == nil || firstKey(b) != nil {
			return fmt.Errorf("%w: bucket %s holds records before the migration that adds it", store.ErrInvariant, name)
		}
	}
	if migrateStep != nil {
		if err := migrateStep(""); err != nil {
			return err
		}
	}
	m.SchemaVersion = 6
	return putJSON(tx.Bucket(bucketMeta), bucketMeta, keyMeta, m)
}

// migrateV3 turns a schema 3 store into schema 4 inside tx: the submitted
// index (seq → job id) is built from every job's seq and the live index
// from every job that has not ended, both sealed like every record, and
// the tombstones bucket starts empty (the opening transaction creates the
// three buckets); no record is rewritten. A job record that fails its
// seal or does not decode, a job without a seq, or two jobs with one seq
// stop the migration: the index could not order them.
func migrateV3(tx *bbolt.Tx, m store.Meta) error {
	jobs := records{b: tx.Bucket(bucketJobs), name: bucketJobs}
	sub := records{b: tx.Bucket(bucketSubmitted), name: bucketSubmitted}
	live := records{b: tx.Bucket(bucketLive), name: bucketLive}
	err := jobs.each(nil, func(k, p []byte) (bool, error) {
		var j store.Job
		if err := json.Unmarshal(p, &j); err != nil {
			return false, fmt.Errorf("decode job %q: %w", k, err)
		}
		if j.ID != string(k) {
			return false, fmt.Errorf("job %q: %w: the record names job %q", k, store.ErrInvariant, j.ID)
		}
		if j.Seq == 0 {
			return false, fmt.Errorf("job %q: %w: no seq", k, store.ErrInvariant)
		}
		sk := seqKey(j.Seq)
		if other := sub.b.Get(sk); other != nil {
			return false, fmt.Errorf("job %q: %w: its seq %d is another job's too", k, store.ErrInvariant, j.Seq)
		}
		if err := sub.put(sk, bytes.Clone(k)); err != nil {
			return false, fmt.Errorf("job %q: index: %w", k, err)
		}
		if !j.State.Terminal() {
			if err := live.put(bytes.Clone(k), nil); err != nil {
				return false, fmt.Errorf("job %q: live index: %w", k, err)
			}
		}
		if migrateStep != nil {
			if err := migrateStep(string(k)); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	m.SchemaVersion = 4
	return putJSON(tx.Bucket(bucketMeta), bucketMeta, keyMeta, m)
}

// migrateV2 turns a schema 2 store into schema 3 inside tx: every value of
// every bucket is sealed (record.go), then the version becomes 3. Every
// record must decode as what its bucket holds before it is sealed: a seal
// vouches for the bytes, so it must not be put on a broken record.
func migrateV2(tx *bbolt.Tx, m store.Meta) error {
	for _, name := range allBuckets {
		b := tx.Bucket(name)
		type kv struct{ k, v []byte }
		var all []kv
		if err := b.ForEach(func(k, v []byte) error {
			if v == nil {
				return fmt.Errorf("%s/%s: %w: a nested bucket", name, store.PrintableKey(k), store.ErrInvariant)
			}
			if err := checkLegacyRecord(name, k, v); err != nil {
				return fmt.Errorf("%s/%s: %w", name, store.PrintableKey(k), err)
			}
			all = append(all, kv{bytes.Clone(k), bytes.Clone(v)})
			return nil
		}); err != nil {
			return err
		}
		for _, r := range all {
			if err := b.Put(r.k, seal(name, r.k, r.v)); err != nil {
				return fmt.Errorf("seal %s/%s: %w", name, store.PrintableKey(r.k), err)
			}
			if migrateStep != nil && bytes.Equal(name, bucketJobs) {
				if err := migrateStep(string(r.k)); err != nil {
					return err
				}
			}
		}
	}
	m.SchemaVersion = 3
	return putJSON(tx.Bucket(bucketMeta), bucketMeta, keyMeta, m)
}

// checkLegacyRecord: a schema 2 value decodes as what its bucket holds.
func checkLegacyRecord(bucket, k, v []byte) error {
	var into any
	switch {
	case bytes.Equal(bucket, bucketJobs):
		into = &store.Job{}
	case bytes.Equal(bucket, bucketAttempts):
		into = &store.Attempt{}
	case bytes.Equal(bucket, bucketEvents):
		into = &store.Event{}
	case bytes.Equal(bucket, bucketMeta):
		into = &store.Meta{}
	case bytes.Equal(bucket, bucketAccepted):
		if len(v) != 4 {
			return fmt.Errorf("%w: an accepted attempt of %d bytes", store.ErrInvariant, len(v))
		}
		return nil
	default:
		return nil // specs and the queue hold bytes
	}
	if err := json.Unmarshal(v, into); err != nil {
		return fmt.Errorf("%w: does not decode: %v", store.ErrInvariant, err)
	}
	return nil
}

// migrateV4 turns a schema 4 store into schema 5, which adds the records
// of local dispatch and fencing: their buckets are created empty by the
// opening transaction, and nothing of the jobs changes. It checks that
// every job attempt decodes and names a job of this store, so that a
// store whose attempts could not be claimed later is refused now, while
// it is whole. Attempts made before schema 5 have no claim; status shows
// them without one (docs/fencing.md).
func migrateV4(tx *bbolt.Tx, m store.Meta) error {
	for _, name := range fencingBuckets {
		if b := tx.Bucket(name); b == nil || firstKey(b) != nil {
			return fmt.Errorf("%w: bucket %s holds records before the migration that adds it", store.ErrInvariant, name)
		}
	}
	jobs := records{b: tx.Bucket(bucketJobs), name: bucketJobs}
	attempts := records{b: tx.Bucket(bucketAttempts), name: bucketAttempts}
	err := attempts.each(nil, func(k, v []byte) (bool, error) {
		var a store.Attempt
		if err := json.Unmarshal(v, &a); err != nil {
			return false, fmt.Errorf("decode attempt %q: %w", k, err)
		}
		if !bytes.Equal(attemptKey(a.Job, a.N), k) {
			return false, fmt.Errorf("attempt %q: %w: it names attempt %s/%d", k, store.ErrInvariant, a.Job, a.N)
		}
		if j, err := jobs.get([]byte(a.Job)); err != nil {
			return false, err
		} else if j == nil {
			return false, fmt.Errorf("attempt %q: %w: job %q does not exist", k, store.ErrInvariant, a.Job)
		}
		if migrateStep != nil {
			if err := migrateStep(a.Job); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	m.SchemaVersion = 5
	return putJSON(tx.Bucket(bucketMeta), bucketMeta, keyMeta, m)
}

func firstKey(b *bbolt.Bucket) []byte {
	k, _ := b.Cursor().First()
	return k
}
