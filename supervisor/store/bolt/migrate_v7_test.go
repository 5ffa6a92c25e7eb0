package bolt

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// TestMigrateV7KeepsSpecRecords: a schema 7 store, whose large specs are
// records of the specs bucket, opens at schema 8 with no record
// rewritten but the meta's version; its large spec reads back, the store
// check finds nothing, and its job is removed with it. The schema 7
// store is made from a schema 8 one: the spec's bucket turned back into
// a record, the version set to 7.
func TestMigrateV7KeepsSpecRecords(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	j, spec := largeSpec("big", 2*specBucketFrom)
	if err := update(t, s, func(tx store.Tx) error { return tx.CreateJob(j, spec) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := bbolt.Open(filepath.Join(dir, FileName), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		specs, id := tx.Bucket(bucketSpecs), []byte("big")
		if specs.Bucket(id) == nil {
			t.Fatal("a large spec is not a bucket of its own")
		}
		if err := specs.DeleteBucket(id); err != nil {
			return err
		}
		if err := specs.Put(id, seal(bucketSpecs, id, spec)); err != nil {
			return err
		}
		meta := tx.Bucket(bucketMeta)
		p, ok := unseal(bucketMeta, keyMeta, meta.Get(keyMeta))
		var m store.Meta
		if !ok || json.Unmarshal(p, &m) != nil || m.SchemaVersion != 8 {
			t.Fatalf("meta %s", p)
		}
		m.SchemaVersion = 7
		return putJSON(meta, bucketMeta, keyMeta, m)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	before := dump(t, dir)
	if s, err = Open(dir, time.Second); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if after := dump(t, dir); !reflect.DeepEqual(withoutMeta(after), withoutMeta(before)) {
		t.Fatal("the migration rewrote records")
	}
	s = open(t, dir)
	err = s.View(t.Context(), func(tx store.Tx) error {
		m, err := tx.Meta()
		if err != nil || m.SchemaVersion != SchemaVersion {
			t.Fatalf("meta %+v %v", m, err)
		}
		if got, err := tx.Spec("big"); err != nil || !bytes.Equal(got, spec) {
			t.Fatalf("the spec record: %v, %d bytes", err, len(got))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Check(t.Context()); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check of the migrated store: %+v %v", rep, err)
	}
	j.State = "failed"
	if err := update(t, s, func(tx store.Tx) error {
		if err := tx.PutJob(j); err != nil {
			return err
		}
		_, err := tx.RemoveJob("big", time.Unix(1700000100, 0).UTC())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if after := dump(t, dir); len(after["specs"]) != 0 {
		t.Fatalf("specs left after the removal: %d", len(after["specs"]))
	}
}
