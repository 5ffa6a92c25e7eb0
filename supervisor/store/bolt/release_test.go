package bolt

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// testdata/v2-release.db is a home's store written by the release before
// schema 3 (commit f758872): cyber-supervisor run of an accepted prove,
// an accepted execute, a memory_exhausted failure and a claim_mismatch
// rejection, then serve with a long job running and another queued,
// killed with SIGKILL.
func copyRelease(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	in, err := os.Open(filepath.Join("testdata", "v2-release.db"))
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

func TestOpensAStoreOfTheLastRelease(t *testing.T) {
	dir := copyRelease(t)
	before := dump(t, dir)
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Every record is kept byte for byte under its seal; schema 4 adds
	// the submitted index (one entry per job) and no tombstone.
	after := unsealed(t, dumpOpen(t, s))
	if len(after["submitted"]) != len(before["jobs"]) || len(after["tombstones"]) != 0 {
		t.Fatalf("submitted index %d entries for %d jobs, %d tombstones", len(after["submitted"]), len(before["jobs"]), len(after["tombstones"]))
	}
	if len(after["live"]) != 2 { // the running and the queued job
		t.Fatalf("live index %d entries, want 2", len(after["live"]))
	}
	delete(after, "submitted")
	delete(after, "live")
	delete(after, "tombstones")
	// Schema 5's fencing buckets are there, empty.
	for _, name := range fencingBuckets {
		if len(after[string(name)]) != 0 {
			t.Fatalf("fencing bucket %s holds %d records after the migration", name, len(after[string(name)]))
		}
		delete(after, string(name))
	}
	if !reflect.DeepEqual(withoutMeta(after), withoutMeta(before)) {
		t.Fatalf("the migration changed records:\nbefore %v\nafter  %v", before, after)
	}
	want := map[lifecycle.State]int{lifecycle.Accepted: 2, lifecycle.Failed: 1, lifecycle.Rejected: 1, lifecycle.Running: 1, lifecycle.Queued: 1}
	got := map[lifecycle.State]int{}
	err = s.View(context.Background(), func(tx store.Tx) error {
		m, err := tx.Meta()
		if err != nil || m.SchemaVersion != SchemaVersion || m.Boots == 0 {
			t.Fatalf("meta %+v %v", m, err)
		}
		var jobs []*store.Job
		if err := tx.ForEachJob(func(j *store.Job) bool { jobs = append(jobs, j); return true }); err != nil {
			return err
		}
		for _, j := range jobs {
			got[j.State]++
			spec, err := tx.Spec(j.ID)
			if err != nil || store.CheckSpec(spec, j.SpecDigest) != nil {
				t.Errorf("job %s: spec %v", j.ID, err)
			}
			as, err := tx.Attempts(j.ID)
			if err != nil || uint32(len(as)) != j.Attempts {
				t.Errorf("job %s: %d attempts of %d (%v)", j.ID, len(as), j.Attempts, err)
			}
			ev, err := tx.Events(j.ID)
			if err != nil || len(ev) == 0 {
				t.Errorf("job %s: events %v", j.ID, err)
			}
		}
		q, err := tx.Queued(10)
		if err != nil || len(q) != 1 {
			t.Errorf("queue %v %v", q, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("job states %v, want %v", got, want)
	}
	s.Close()
	f, err := os.Open(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := checkFile(f)
	if want := countRecords(before) + len(before["jobs"]) + 2; err != nil || !rep.Sealed || rep.Schema != SchemaVersion || rep.Records != want {
		t.Fatalf("the migrated file: %+v %v (want %d sealed records)", rep, err, want)
	}
}

func withoutMeta(d map[string]map[string]string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for k, v := range d {
		if k != "meta" {
			out[k] = v
		}
	}
	return out
}

func countRecords(d map[string]map[string]string) int {
	n := 0
	for _, b := range d {
		n += len(b)
	}
	return n
}
