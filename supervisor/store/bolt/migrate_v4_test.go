package bolt

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// testdata/v4-release.db is a home's store written by the release before
// fencing (schema 4, commit 9561ce1): cyber-supervisor run of an accepted
// execute job (v4-add), an accepted prove job (v4-prove), a job that
// failed with budget_exhausted (v4-count), and a queued job (v4-queued)
// written through that release's store API.
func copyV4Release(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	in, err := os.Open(filepath.Join("testdata", "v4-release.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(filepath.Join(dir, FileName), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMigrateV4Release: the release before fencing opens at schema 5 and
// keeps every job, spec, attempt, event and index record byte for byte;
// the fencing buckets are there and empty; a neuron can then be set up
// and the old jobs' attempts have no claim.
func TestMigrateV4Release(t *testing.T) {
	dir := copyV4Release(t)
	before := dump(t, dir)
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	after := unsealed(t, dumpOpen(t, s))
	if !reflect.DeepEqual(only(after, before), withoutMeta(unsealed(t, before))) {
		t.Fatal("the migration changed records of the jobs")
	}
	for _, name := range fencingBuckets {
		if b, ok := after[string(name)]; !ok || len(b) != 0 {
			t.Fatalf("fencing bucket %s: present %v, %d records", name, ok, len(b))
		}
	}
	want := map[string]lifecycle.State{"v4-add": lifecycle.Accepted, "v4-prove": lifecycle.Accepted, "v4-count": lifecycle.Failed, "v4-queued": lifecycle.Queued}
	err = s.Local().View(context.Background(), func(tx store.LocalTx) error {
		m, err := tx.Meta()
		if err != nil || m.SchemaVersion != SchemaVersion {
			t.Fatalf("meta %+v %v", m, err)
		}
		for id, st := range want {
			j, err := tx.Job(id)
			if err != nil || j.State != st {
				t.Fatalf("job %s: %+v %v", id, j, err)
			}
			atts, err := tx.Attempts(id)
			if err != nil || len(atts) != int(j.Attempts) {
				t.Fatalf("attempts of %s: %v", id, err)
			}
			for _, a := range atts {
				if _, err := tx.JobClaim(id, a.N); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("a claim appeared for %s/%d: %v", id, a.N, err)
				}
			}
		}
		if _, err := tx.Root(); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a migrated home has a neuron: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Check(context.Background())
	if err != nil || len(rep.Problems) != 0 || rep.Jobs != 4 {
		t.Fatalf("check of the migrated store: %+v %v", rep, err)
	}
	s.Close()
	// Opened again (by this build) nothing changes.
	mid := dump(t, dir)
	s = open(t, dir)
	s.Close()
	if !reflect.DeepEqual(dump(t, dir), mid) {
		t.Fatal("reopening the migrated store changed it")
	}
}

// TestMigrateV4AllOrNothing: a failure in the fencing step leaves the
// schema 4 store exactly as it was, and the next open migrates it.
func TestMigrateV4AllOrNothing(t *testing.T) {
	dir := copyV4Release(t)
	before := dump(t, dir)
	errStop := errors.New("stop")
	migrateStep = func(string) error { return errStop }
	_, err := Open(dir, time.Second)
	migrateStep = nil
	if !errors.Is(err, errStop) {
		t.Fatalf("open with a failing migration: %v", err)
	}
	if !reflect.DeepEqual(dump(t, dir), before) {
		t.Fatal("a failed migration changed the store")
	}
	s := open(t, dir)
	defer s.Close()
	_ = s.Local().View(context.Background(), func(tx store.LocalTx) error {
		if m, _ := tx.Meta(); m.SchemaVersion != SchemaVersion {
			t.Fatalf("schema %d after the second open", m.SchemaVersion)
		}
		return nil
	})
}

// only is d's buckets that like has, but meta.
func only(d, like map[string]map[string]string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for k := range like {
		if k != "meta" {
			out[k] = d[k]
		}
	}
	return out
}
