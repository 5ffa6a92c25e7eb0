package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// migrateStep, when set (by tests), runs after each job is migrated; an
// error aborts the migration.
var migrateStep func(job string) error

// migration is one step of the chain from an older schema.
type migration struct {
	to  int
	run func(tx *bolt.Tx) error
}

// migrations are keyed by the version they migrate from. Schema 3 (job
// tombstones) is being added on another branch; when it lands, the
// fencing step runs from 3 instead of 2 and the chain is 1 → 2 → 3 → 4.
var migrations = map[int]migration{
	1: {to: 2, run: migrateV1},
	2: {to: 4, run: migrateFencing},
}

// migrate brings the store at meta.SchemaVersion up to SchemaVersion,
// step by step, inside tx (the opening transaction: all or nothing).
func migrate(tx *bolt.Tx, m Meta, path string) error {
	from := m.SchemaVersion
	for m.SchemaVersion != SchemaVersion {
		step, ok := migrations[m.SchemaVersion]
		if !ok {
			return fmt.Errorf("%w: %s has version %d, this build reads %d (and migrates %v)", ErrSchema, path, m.SchemaVersion, SchemaVersion, migrationSources())
		}
		if err := step.run(tx); err != nil {
			return fmt.Errorf("migrate %s from schema %d to %d: %w", path, m.SchemaVersion, step.to, err)
		}
		m.SchemaVersion = step.to
	}
	if m.SchemaVersion == from {
		return nil
	}
	if err := putJSON(tx.Bucket(bucketMeta), keyMeta, m); err != nil {
		return fmt.Errorf("write meta: %w", err)
	}
	return nil
}

func migrationSources() []int {
	var vs []int
	for v := range migrations {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs
}

// v1Job is a schema 1 job record: the v2 record with the frozen spec in
// it (base64 in JSON).
type v1Job struct {
	Job
	Spec []byte `json:"spec"`
}

// migrateV1 turns a schema 1 store into schema 2 inside tx, the opening
// transaction: every job's spec moves to the specs bucket, as raw bytes,
// and its record is rewritten without it. An
// error, or the process dying before the commit, leaves the store at
// schema 1, untouched. A spec that does not hash to its job's
// spec_digest stops the migration: the store is not opened on a broken
// record.
func migrateV1(tx *bolt.Tx) error {
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
			return fmt.Errorf("job %q: %w: the record names job %q", k, ErrInvariant, old.ID)
		}
		if err := checkSpec(old.Spec, old.SpecDigest); err != nil {
			return fmt.Errorf("job %q: %w", k, err)
		}
		if err := specs.Put(k, old.Spec); err != nil {
			return fmt.Errorf("job %q: store spec: %w", k, err)
		}
		if err := putJSON(jobs, k, &old.Job); err != nil {
			return fmt.Errorf("job %q: rewrite: %w", k, err)
		}
		if migrateStep != nil {
			if err := migrateStep(string(k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// migrateFencing adds the fencing records (schema 4): their buckets are
// created empty by the opening transaction, and nothing of the jobs
// changes. It checks that every job attempt decodes and names a job, so
// that a store whose attempts could not be claimed later is refused now,
// while it is still whole. Attempts of this store have no claim: they
// were made before claims existed, and docs/fencing.md says how status
// shows them.
func migrateFencing(tx *bolt.Tx) error {
	jobs := tx.Bucket(bucketJobs)
	for _, name := range fencingBuckets {
		if b := tx.Bucket(name); b == nil || firstKey(b) != nil {
			return fmt.Errorf("%w: bucket %s exists before the migration that adds it", ErrInvariant, name)
		}
	}
	return tx.Bucket(bucketAttempts).ForEach(func(k, v []byte) error {
		var a Attempt
		if err := json.Unmarshal(v, &a); err != nil {
			return fmt.Errorf("decode attempt %q: %w", k, err)
		}
		if !bytes.Equal(attemptKey(a.Job, a.N), k) || jobs.Get([]byte(a.Job)) == nil {
			return fmt.Errorf("attempt %q: %w: it names job %q attempt %d", k, ErrInvariant, a.Job, a.N)
		}
		if migrateStep != nil {
			return migrateStep(a.Job)
		}
		return nil
	})
}

func firstKey(b *bolt.Bucket) []byte {
	k, _ := b.Cursor().First()
	return k
}
