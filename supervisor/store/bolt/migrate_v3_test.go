package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// v3JobRecord is a job's payload as schemas 2 and 3 stored it (3 seals
// it), spelled out by hand.
func v3JobRecord(id string, seq uint64, state string, attempts, accepted uint32) []byte {
	acc := ""
	if accepted != 0 {
		acc = fmt.Sprintf(`"accepted":%d,`, accepted)
	}
	return fmt.Appendf(nil, `{"id":%q,"spec_digest":%q,"operation":"execute","priority":0,`+
		`"retry":{"max_attempts":1,"backoff_ns":0,"max_backoff_ns":0,"retryable":null},`+
		`"seq":%d,"state":%q,"attempts":%d,%s"not_before":"0001-01-01T00:00:00Z",`+
		`"created":"2024-01-02T03:04:05Z","updated":"2024-01-02T03:04:06Z"}`,
		id, store.SpecDigest(specOf(id)), seq, state, attempts, acc)
}

// v3Fixture is a v3 store's payloads: three jobs (seq 1..3, ids not in
// seq order), their specs, an accepted attempt with its index, an event,
// a queue entry.
func v3Fixture() map[string]map[string][]byte {
	rec := map[string]map[string][]byte{"jobs": {}, "specs": {}, "attempts": {}, "events": {}, "queue": {}, "queue_index": {}, "accepted": {}}
	for i, j := range []struct {
		id, state          string
		attempts, accepted uint32
	}{{"zq", "queued", 0, 0}, {"acc", "accepted", 1, 1}, {"mf", "failed", 1, 0}} {
		rec["jobs"][j.id] = v3JobRecord(j.id, uint64(i+1), j.state, j.attempts, j.accepted)
		rec["specs"][j.id] = specOf(j.id)
	}
	rec["attempts"][string(attemptKey("acc", 1))] = []byte(`{"job":"acc","n":1,"boot":"b","generation":0,"created":"2024-01-02T03:04:05Z","state":"accepted","verified":"e30=","telemetry":{}}`)
	rec["accepted"]["acc"] = binary.BigEndian.AppendUint32(nil, 1)
	rec["events"][string(append([]byte("acc\x00"), binary.BigEndian.AppendUint64(nil, 1)...))] = []byte(`{"job":"acc","seq":1,"time":"2024-01-02T03:04:05Z","to":"queued","reason":"submitted"}`)
	qk := queueKey(0, 1)
	rec["queue"][string(qk)] = []byte("zq")
	rec["queue_index"]["zq"] = qk
	return rec
}

// writeV3 writes a schema 3 store in dir by hand: the v3 buckets, meta
// at version 3, and the given payloads, every value sealed.
func writeV3(t testing.TB, dir string, records map[string]map[string][]byte) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(dir, FileName), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range []string{"meta", "jobs", "specs", "attempts", "events", "queue", "queue_index", "accepted"} {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			for k, v := range records[name] {
				if err := b.Put([]byte(k), seal([]byte(name), []byte(k), v)); err != nil {
					return err
				}
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("meta"), seal(bucketMeta, keyMeta,
			[]byte(`{"schema_version":3,"created":"2024-01-01T00:00:00Z","boot":"boot-7","boots":7,"next_seq":3}`)))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkMigratedV3: s is the v3 store before, now at schema 4: every v3
// bucket byte for byte as it was, the submitted index (sealed) in seq
// order, no tombstones.
func checkMigratedV3(t *testing.T, s *Store, before map[string]map[string]string) {
	t.Helper()
	now := dumpOpen(t, s)
	for name, b := range before {
		if name != "meta" && !reflect.DeepEqual(now[name], b) {
			t.Fatalf("bucket %s changed by the migration", name)
		}
	}
	want := map[string]string{string(seqKey(1)): "zq", string(seqKey(2)): "acc", string(seqKey(3)): "mf"}
	if !reflect.DeepEqual(unsealed(t, now)["submitted"], want) {
		t.Fatalf("submitted index %q", now["submitted"])
	}
	if live := unsealed(t, now)["live"]; len(live) != 1 || live["zq"] != "" {
		t.Fatalf("live index %q, want the queued job only", live)
	}
	if len(now["tombstones"]) != 0 {
		t.Fatalf("tombstones %q", now["tombstones"])
	}
	_ = s.View(t.Context(), func(tx store.Tx) error {
		m, err := tx.Meta()
		if err != nil || m.SchemaVersion != SchemaVersion || m.Boot != "boot-7" || m.Boots != 7 || m.NextSeq != 3 {
			t.Fatalf("meta %+v %v", m, err)
		}
		checkSubmitted(t, tx, 3)
		return nil
	})
}

func TestMigrateV3(t *testing.T) {
	dir := t.TempDir()
	writeV3(t, dir, v3Fixture())
	before := dump(t, dir)
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	checkMigratedV3(t, s, before)
	s.Close()
	after := dump(t, dir)
	s = open(t, dir)
	checkMigratedV3(t, s, before)
	s.Close()
	if again := dump(t, dir); !reflect.DeepEqual(again, after) {
		t.Fatal("reopening the migrated store changed it")
	}
}

// A v3 migration that fails half-way leaves the v3 store as it was; the
// next open migrates it.
func TestMigrateV3AllOrNothing(t *testing.T) {
	dir := t.TempDir()
	writeV3(t, dir, v3Fixture())
	before := dump(t, dir)
	errStop := errors.New("stop")
	n := 0
	migrateStep = func(string) error {
		if n++; n == 2 {
			return errStop
		}
		return nil
	}
	_, err := Open(dir, time.Second)
	migrateStep = nil
	if !errors.Is(err, errStop) {
		t.Fatalf("open with a failing migration: %v", err)
	}
	if after := dump(t, dir); !reflect.DeepEqual(after, before) {
		t.Fatal("a failed migration changed the store")
	}
	checkMigratedV3(t, open(t, dir), before)
}

// Jobs the index could not order (no seq, a seq taken twice) stop the
// migration: the store stays v3, unchanged.
func TestMigrateV3RefusesUnorderedJobs(t *testing.T) {
	for name, edit := range map[string]func(map[string]map[string][]byte){
		"duplicate seq": func(fx map[string]map[string][]byte) { fx["jobs"]["mf"] = v3JobRecord("mf", 2, "failed", 1, 0) },
		"no seq":        func(fx map[string]map[string][]byte) { fx["jobs"]["mf"] = v3JobRecord("mf", 0, "failed", 1, 0) },
		"broken record": func(fx map[string]map[string][]byte) { fx["jobs"]["mf"] = []byte(`{"id":`) },
	} {
		dir := t.TempDir()
		fx := v3Fixture()
		edit(fx)
		writeV3(t, dir, fx)
		before := dump(t, dir)
		_, err := Open(dir, time.Second)
		if err == nil || (name != "broken record") != errors.Is(err, store.ErrInvariant) {
			t.Fatalf("%s: %v", name, err)
		}
		if after := dump(t, dir); !reflect.DeepEqual(after, before) {
			t.Fatalf("%s: a refused migration changed the store", name)
		}
	}
}
