package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// releaseV2 unpacks testdata/v2-release.db.zst into a new store dir: a
// home's store written by the release before fencing (schema 2), with
// four jobs: v2-add (an accepted execute job), v2-prove (an accepted
// prove job), v2-count (failed: budget exhausted) and v2-queued (still
// queued).
func releaseV2(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("testdata/v2-release.db.zst")
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	db, err := dec.DecodeAll(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), db, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMigrateReleaseV2: the previous release's store opens, is at the
// current schema, and keeps every job, spec, attempt, event and queue
// entry byte for byte; the fencing buckets are there and empty.
func TestMigrateReleaseV2(t *testing.T) {
	dir := releaseV2(t)
	before := dump(t, dir)
	var meta Meta
	if err := json.Unmarshal([]byte(before["meta"]["meta"]), &meta); err != nil || meta.SchemaVersion != 2 {
		t.Fatalf("fixture meta %q: %v", before["meta"]["meta"], err)
	}
	if len(before["jobs"]) != 4 {
		t.Fatalf("fixture has %d jobs, want 4", len(before["jobs"]))
	}
	s, err := OpenBolt(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]lifecycle.State{"v2-add": lifecycle.Accepted, "v2-prove": lifecycle.Accepted, "v2-count": lifecycle.Failed, "v2-queued": lifecycle.Queued}
	err = s.View(context.Background(), func(tx Tx) error {
		m, err := tx.Meta()
		if err != nil || m.SchemaVersion != SchemaVersion || m.Boots != meta.Boots || m.NextSeq != meta.NextSeq {
			t.Fatalf("meta after migration %+v %v", m, err)
		}
		for id, st := range want {
			j, err := tx.Job(id)
			if err != nil || j.State != st {
				t.Fatalf("job %s: %+v %v", id, j, err)
			}
			if _, err := tx.Spec(id); err != nil {
				t.Fatalf("spec of %s: %v", id, err)
			}
			atts, err := tx.Attempts(id)
			if err != nil || len(atts) != int(j.Attempts) {
				t.Fatalf("attempts of %s: %d of %d, %v", id, len(atts), j.Attempts, err)
			}
			for _, a := range atts {
				if _, err := tx.JobClaim(id, a.N); !errors.Is(err, ErrNotFound) {
					t.Fatalf("a claim appeared for %s/%d: %v", id, a.N, err)
				}
			}
			ev, err := tx.Events(id)
			if err != nil || len(ev) == 0 {
				t.Fatalf("events of %s: %v", id, err)
			}
		}
		q, err := tx.Queued(10)
		if err != nil || !reflect.DeepEqual(q, []string{"v2-queued"}) {
			t.Fatalf("queue %v %v", q, err)
		}
		if _, err := tx.Root(); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a migrated home has a neuron: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	after := dump(t, dir)
	for name, b := range before {
		if name == "meta" {
			continue
		}
		if !reflect.DeepEqual(after[name], b) {
			t.Fatalf("bucket %s changed in the migration", name)
		}
	}
	for _, name := range fencingBuckets {
		if b, ok := after[string(name)]; !ok || len(b) != 0 {
			t.Fatalf("fencing bucket %s: present %v, %d records", name, ok, len(b))
		}
	}
	// Reopening changes nothing more.
	s = open(t, dir)
	s.Close()
	if again := dump(t, dir); !reflect.DeepEqual(again, after) {
		t.Fatal("reopening the migrated store changed it")
	}
}

// TestMigrateV2AllOrNothing: a failure in the fencing step leaves the
// schema 2 store exactly as it was; the next open migrates it.
func TestMigrateV2AllOrNothing(t *testing.T) {
	dir := releaseV2(t)
	before := dump(t, dir)
	errStop := errors.New("stop")
	migrateStep = func(string) error { return errStop }
	_, err := OpenBolt(dir, time.Second)
	migrateStep = nil
	if !errors.Is(err, errStop) {
		t.Fatalf("open with a failing migration: %v", err)
	}
	if after := dump(t, dir); !reflect.DeepEqual(after, before) {
		t.Fatal("a failed migration changed the store")
	}
	s := open(t, dir)
	defer s.Close()
	_ = s.View(context.Background(), func(tx Tx) error {
		if m, _ := tx.Meta(); m.SchemaVersion != SchemaVersion {
			t.Fatalf("schema %d after the second open", m.SchemaVersion)
		}
		return nil
	})
}
