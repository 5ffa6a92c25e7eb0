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
func migrateV1(tx *bolt.Tx, m Meta) error {
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
	m.SchemaVersion = 2
	if err := putJSON(tx.Bucket(bucketMeta), keyMeta, m); err != nil {
		return fmt.Errorf("write meta: %w", err)
	}
	return nil
}
