package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// migrateStep, when set (by tests), runs after each job is migrated; an
// error aborts the migration.
var migrateStep func(job string) error

// migrations turn a store of schema v into v+1 inside the opening
// transaction, returning the meta record at v+1 (written by the caller
// once the last one ran).
var migrations = map[int]func(*bolt.Tx, Meta) (Meta, error){
	1: migrateV1,
	2: migrateV2,
}

// v1Job is a schema 1 job record: the v2 record with the frozen spec in
// it (base64 in JSON).
type v1Job struct {
	Job
	Spec []byte `json:"spec"`
}

// migrateV1 turns a schema 1 store into schema 2 inside tx, the opening
// transaction: every job's spec moves to the specs bucket, as raw bytes,
// and its record is rewritten without it; then the version becomes 2. An
// error, or the process dying before the commit, leaves the store at
// schema 1, untouched. A spec that does not hash to its job's
// spec_digest stops the migration: the store is not opened on a broken
// record.
func migrateV1(tx *bolt.Tx, m Meta) (Meta, error) {
	jobs, specs := tx.Bucket(bucketJobs), tx.Bucket(bucketSpecs)
	// Keys first: a bucket is not written while a cursor walks it.
	var ids [][]byte
	if err := jobs.ForEach(func(k, _ []byte) error {
		ids = append(ids, bytes.Clone(k))
		return nil
	}); err != nil {
		return m, fmt.Errorf("list jobs: %w", err)
	}
	for _, k := range ids {
		var old v1Job
		if err := json.Unmarshal(jobs.Get(k), &old); err != nil {
			return m, fmt.Errorf("decode job %q: %w", k, err)
		}
		if old.ID != string(k) {
			return m, fmt.Errorf("job %q: %w: the record names job %q", k, ErrInvariant, old.ID)
		}
		if err := checkSpec(old.Spec, old.SpecDigest); err != nil {
			return m, fmt.Errorf("job %q: %w", k, err)
		}
		if err := specs.Put(k, old.Spec); err != nil {
			return m, fmt.Errorf("job %q: store spec: %w", k, err)
		}
		if err := putJSON(jobs, k, &old.Job); err != nil {
			return m, fmt.Errorf("job %q: rewrite: %w", k, err)
		}
		if migrateStep != nil {
			if err := migrateStep(string(k)); err != nil {
				return m, err
			}
		}
	}
	m.SchemaVersion = 2
	return m, nil
}

// migrateV2 turns a schema 2 store into schema 3: the submitted index
// (seq → job id) is built from every job's seq, and the tombstones
// bucket starts empty (both buckets are created by the opening
// transaction). Job records are read, not rewritten. A job without a seq,
// or two jobs with one seq, stop the migration (ErrInvariant): the index
// could not order them.
func migrateV2(tx *bolt.Tx, m Meta) (Meta, error) {
	sub := tx.Bucket(bucketSubmitted)
	err := tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
		var j Job
		if err := json.Unmarshal(v, &j); err != nil {
			return fmt.Errorf("decode job %q: %w", k, err)
		}
		if j.ID != string(k) {
			return fmt.Errorf("job %q: %w: the record names job %q", k, ErrInvariant, j.ID)
		}
		sk := seqKey(j.Seq)
		if j.Seq == 0 {
			return fmt.Errorf("job %q: %w: no seq", k, ErrInvariant)
		}
		if other := sub.Get(sk); other != nil {
			return fmt.Errorf("job %q: %w: seq %d is also job %q's", k, ErrInvariant, j.Seq, other)
		}
		if err := sub.Put(sk, bytes.Clone(k)); err != nil {
			return fmt.Errorf("job %q: index: %w", k, err)
		}
		if migrateStep != nil {
			return migrateStep(string(k))
		}
		return nil
	})
	if err != nil {
		return m, err
	}
	m.SchemaVersion = 3
	return m, nil
}
