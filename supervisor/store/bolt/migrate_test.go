package bolt

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// v1JobRecord is a job as schema 1 stored it, spelled out by hand so
// that the fixture does not follow the current record types.
func v1JobRecord(id string, spec []byte, digest string, seq uint64, state lifecycle.State, attempts, accepted uint32) []byte {
	acc := ""
	if accepted != 0 {
		acc = fmt.Sprintf(`"accepted":%d,`, accepted)
	}
	return fmt.Appendf(nil, `{"id":%q,"spec":%q,"spec_digest":%q,"operation":"execute","priority":2,`+
		`"retry":{"max_attempts":3,"backoff_ns":1000,"max_backoff_ns":5000,"retryable":["io_error"]},`+
		`"seq":%d,"state":%q,"attempts":%d,%s"not_before":"0001-01-01T00:00:00Z",`+
		`"created":"2023-11-14T22:13:20Z","updated":"2023-11-14T22:13:21Z"}`,
		id, base64.StdEncoding.EncodeToString(spec), digest, seq, state, attempts, acc)
}

// writeV1 writes a schema 1 store in dir by hand: the v1 buckets, meta
// at version 1, and the given buckets' records.
func writeV1(t testing.TB, dir string, records map[string]map[string][]byte) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(dir, FileName), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range []string{"meta", "jobs", "attempts", "events", "queue", "queue_index", "accepted"} {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			for k, v := range records[name] {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("meta"),
			[]byte(`{"schema_version":1,"created":"2023-11-14T22:00:00Z","boot":"boot-3","boots":3,"next_seq":3}`))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// v1Fixture is a v1 store with three jobs: one queued, one accepted (with
// its attempt, events and index), one failed.
func v1Fixture() map[string]map[string][]byte {
	rec := map[string]map[string][]byte{"jobs": {}, "attempts": {}, "events": {}, "queue": {}, "queue_index": {}, "accepted": {}}
	for i, id := range []string{"q", "acc", "f"} {
		state, attempts, accepted := lifecycle.Queued, uint32(0), uint32(0)
		switch id {
		case "acc":
			state, attempts, accepted = lifecycle.Accepted, 1, 1
		case "f":
			state, attempts = lifecycle.Failed, 1
		}
		rec["jobs"][id] = v1JobRecord(id, specOf(id), store.SpecDigest(specOf(id)), uint64(i+1), state, attempts, accepted)
	}
	rec["attempts"][string(attemptKey("acc", 1))] = []byte(`{"job":"acc","n":1,"boot":"boot-2","generation":0,"created":"2023-11-14T22:13:20Z","state":"accepted","verified":"e30=","telemetry":{}}`)
	rec["attempts"][string(attemptKey("f", 1))] = []byte(`{"job":"f","n":1,"boot":"boot-2","generation":0,"created":"2023-11-14T22:13:20Z","state":"failed","telemetry":{}}`)
	rec["accepted"]["acc"] = binary.BigEndian.AppendUint32(nil, 1)
	rec["events"][string(append([]byte("acc\x00"), binary.BigEndian.AppendUint64(nil, 1)...))] = []byte(`{"job":"acc","seq":1,"time":"2023-11-14T22:13:20Z","to":"queued","reason":"submitted"}`)
	qk := queueKey(2, 1)
	rec["queue"][string(qk)] = []byte("q")
	rec["queue_index"]["q"] = qk
	return rec
}

// dump reads every bucket of the store file in dir, raw.
func dump(t testing.TB, dir string) map[string]map[string]string {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(dir, FileName), 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return dumpDB(t, db)
}

// dumpDB is every bucket of db as strings; a nested bucket (a large
// spec's, specs/<id>) is one of its own, named by its path.
func dumpDB(t testing.TB, db *bbolt.DB) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	var dumpBucket func(name string, b *bbolt.Bucket) error
	dumpBucket = func(name string, b *bbolt.Bucket) error {
		m := map[string]string{}
		out[name] = m
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return dumpBucket(name+"/"+string(k), b.Bucket(k))
			}
			m[string(k)] = string(v)
			return nil
		})
	}
	err := db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error { return dumpBucket(string(name), b) })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMigrateV1(t *testing.T) {
	dir := t.TempDir()
	writeV1(t, dir, v1Fixture())
	before := dump(t, dir)
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	checkMigrated(t, s, before)
	s.Close()
	after := dump(t, dir)
	// Reopening a v2 store changes nothing.
	s = open(t, dir)
	checkMigrated(t, s, before)
	s.Close()
	if again := dump(t, dir); !reflect.DeepEqual(again, after) {
		t.Fatal("reopening the migrated store changed it")
	}
}

// checkMigrated: s is the v1 store before, at the current schema: specs
// in their bucket byte for byte, job records the same but for the spec,
// everything else as it was, and every record sealed.
func checkMigrated(t *testing.T, s *Store, before map[string]map[string]string) {
	t.Helper()
	_ = s.View(context.Background(), func(tx store.Tx) error {
		m, err := tx.Meta()
		if err != nil || m.SchemaVersion != SchemaVersion || m.Boot != "boot-3" || m.Boots != 3 || m.NextSeq != 3 {
			t.Fatalf("meta %+v %v", m, err)
		}
		checkSubmitted(t, tx, len(before["jobs"]))
		for id, raw := range before["jobs"] {
			var v1 map[string]any
			if err := json.Unmarshal([]byte(raw), &v1); err != nil {
				t.Fatal(err)
			}
			spec, err := tx.Spec(id)
			if err != nil || string(spec) != string(specOf(id)) {
				t.Fatalf("spec of %s: %q %v", id, spec, err)
			}
			j, err := tx.Job(id)
			if err != nil {
				t.Fatal(err)
			}
			enc, _ := json.Marshal(j)
			var v2 map[string]any
			_ = json.Unmarshal(enc, &v2)
			delete(v1, "spec")
			if v1["not_before"] == "0001-01-01T00:00:00Z" {
				delete(v1, "not_before") // unset times are left out since schema 4
			}
			if !reflect.DeepEqual(v1, v2) {
				t.Fatalf("job %s:\nv1 %v\nv2 %v", id, v1, v2)
			}
		}
		return nil
	})
	now := unsealed(t, dumpOpen(t, s))
	for name, b := range before {
		if name == "meta" || name == "jobs" {
			continue
		}
		if !reflect.DeepEqual(now[name], b) {
			t.Fatalf("bucket %s changed by the migration", name)
		}
	}
	for id, raw := range now["jobs"] {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			t.Fatal(err)
		}
		if _, ok := rec["spec"]; ok {
			t.Fatalf("job %s still carries its spec", id)
		}
	}
	if len(now["specs"]) != len(before["jobs"]) {
		t.Fatalf("%d specs for %d jobs", len(now["specs"]), len(before["jobs"]))
	}
}

// checkSubmitted: the submitted index lists n jobs, each once, in seq
// order, and there are no tombstones.
func checkSubmitted(t *testing.T, tx store.Tx, n int) {
	t.Helper()
	var seqs []uint64
	if err := tx.ForEachSubmitted(false, func(j *store.Job) bool {
		seqs = append(seqs, j.Seq)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(seqs) != n || !slices.IsSorted(seqs) || len(slices.Compact(slices.Clone(seqs))) != n {
		t.Fatalf("submitted index: seqs %v for %d jobs", seqs, n)
	}
	if ts := tx.(*boltTx).tx.Bucket(bucketTombstones); ts == nil || ts.Stats().KeyN != 0 {
		t.Fatal("a migrated store has tombstones")
	}
}

// unsealed is a dump of a sealed store with every value's payload; a
// value that is not sealed fails the test.
func unsealed(t testing.TB, d map[string]map[string]string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for name, b := range d {
		out[name] = map[string]string{}
		for k, v := range b {
			p, ok := unseal([]byte(name), []byte(k), []byte(v))
			if !ok {
				t.Fatalf("%s/%q is not sealed", name, k)
			}
			out[name][k] = string(p)
		}
	}
	return out
}

// dumpOpen is dump through the open store's own handle.
func dumpOpen(t *testing.T, s *Store) map[string]map[string]string {
	t.Helper()
	return dumpDB(t, s.db)
}

// TestMigrationAllOrNothing: a migration that fails after some jobs were
// moved leaves the v1 store exactly as it was, and the next open
// migrates it.
func TestMigrationAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	writeV1(t, dir, v1Fixture())
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
		t.Fatalf("a failed migration changed the store:\n%v\n%v", before, after)
	}
	s := open(t, dir)
	checkMigrated(t, s, before)
}

// TestMigrationCrash: the process dies (SIGKILL) after some jobs were
// moved, before the commit. The store is still v1, whole, and opens.
func TestMigrationCrash(t *testing.T) {
	if dir := os.Getenv("STORE_TEST_CRASH_DIR"); dir != "" {
		n := 0
		migrateStep = func(string) error {
			if n++; n == 2 {
				p, _ := os.FindProcess(os.Getpid())
				p.Kill()
				time.Sleep(time.Minute)
			}
			return nil
		}
		Open(dir, time.Second)
		os.Exit(3) // not reached
	}
	dir := t.TempDir()
	writeV1(t, dir, v1Fixture())
	before := dump(t, dir)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestMigrationCrash$")
	cmd.Env = append(os.Environ(), "STORE_TEST_CRASH_DIR="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 {
		t.Fatalf("the migrating process was not killed: %v\n%s", err, out)
	}
	if after := dump(t, dir); !reflect.DeepEqual(after, before) {
		t.Fatalf("a crashed migration changed the store:\n%v\n%v", before, after)
	}
	s := open(t, dir)
	checkMigrated(t, s, before)
}

// TestMigrationRefusesBrokenRecords: a v1 job whose spec does not hash to
// its digest, or that has no spec, stops the open; the store is left as
// it was.
func TestMigrationRefusesBrokenRecords(t *testing.T) {
	for name, rec := range map[string][]byte{
		"digest":  v1JobRecord("q", specOf("q"), store.SpecDigest([]byte("other")), 1, lifecycle.Queued, 0, 0),
		"no spec": v1JobRecord("q", nil, store.SpecDigest(nil), 1, lifecycle.Queued, 0, 0),
		"id":      v1JobRecord("other", specOf("q"), store.SpecDigest(specOf("q")), 1, lifecycle.Queued, 0, 0),
		"json":    []byte(`{"id":`),
	} {
		dir := t.TempDir()
		fx := v1Fixture()
		fx["jobs"]["q"] = rec
		writeV1(t, dir, fx)
		before := dump(t, dir)
		_, err := Open(dir, time.Second)
		if err == nil || (name != "json") != errors.Is(err, store.ErrInvariant) {
			t.Fatalf("%s: broken v1 record: %v", name, err)
		}
		if after := dump(t, dir); !reflect.DeepEqual(after, before) {
			t.Fatalf("%s: a refused migration changed the store", name)
		}
	}
}

// TestUnknownSchemaRefused: versions other than 1, 2 and 3 are not read,
// sealed or not, and the refusal writes nothing.
func TestUnknownSchemaRefused(t *testing.T) {
	for _, v := range []int{0, SchemaVersion + 1, -(SchemaVersion + 1)} {
		dir := t.TempDir()
		writeV1(t, dir, v1Fixture())
		db, err := bbolt.Open(filepath.Join(dir, FileName), 0o600, &bbolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bbolt.Tx) error {
			meta := fmt.Appendf(nil, `{"schema_version":%d}`, max(v, -v))
			if v < 0 {
				meta = seal(bucketMeta, keyMeta, meta)
			}
			return tx.Bucket([]byte("meta")).Put([]byte("meta"), meta)
		})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		before := dump(t, dir)
		if _, err := Open(dir, time.Second); !errors.Is(err, store.ErrSchema) {
			t.Fatalf("version %d: %v, want ErrSchema", v, err)
		}
		if after := dump(t, dir); !reflect.DeepEqual(after, before) {
			t.Fatalf("version %d: the refusal changed the store", v)
		}
	}
}
