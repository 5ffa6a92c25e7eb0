package bolt

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// largeSpec is a job of a frozen spec of size bytes (a verify job's,
// whose artifact travels inline), with room for its record's checksum.
func largeSpec(id string, size int) (*store.Job, []byte) {
	spec := make([]byte, size, size+sealSize)
	for i := range spec {
		spec[i] = 'a' + byte(i%26)
	}
	now := time.Unix(1700000000, 0).UTC()
	return &store.Job{ID: id, SpecDigest: store.SpecDigest(spec), State: lifecycle.Queued, Seq: testSeq.Add(1),
		Created: now, Updated: now, Retry: store.RetryPolicy{MaxAttempts: 1}}, spec
}

// createAllocates creates j with spec in s and returns what the
// transaction allocated.
func createAllocates(t *testing.T, s *Store, j *store.Job, spec []byte) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := update(t, s, func(tx store.Tx) error { return tx.CreateJob(j, spec) })
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return after.TotalAlloc - before.TotalAlloc
}

// TestLargeSpecIsNotCopiedToBeSealed: a frozen spec of 8 MiB with room
// for its record's checksum is sealed in place. What storing it
// allocates is bbolt's: the commit's page, and, since the write takes
// the new store's file past bbolt's mapping, the copy bbolt makes of
// what the transaction wrote to remap the file (2.0 times the spec).
// Before, the checksum was appended to a copy (3.0 times; it fails
// there). The spec reads back whole, and the caller's bytes are as they
// were.
func TestLargeSpecIsNotCopiedToBeSealed(t *testing.T) {
	s, err := OpenWith(t.TempDir(), Options{LockWait: 20 * time.Millisecond, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const size = 8 << 20
	j, spec := largeSpec("big", size)
	want := bytes.Clone(spec)
	n := createAllocates(t, s, j, spec)
	t.Logf("%.1f MiB allocated to store a %.1f MiB spec", float64(n)/(1<<20), float64(size)/(1<<20))
	if n > 2*size+size/2 {
		t.Errorf("%d bytes allocated to store a spec of %d: more than bbolt's page and remap", n, size)
	}
	if !bytes.Equal(spec, want) {
		t.Error("the caller's spec changed")
	}
	var got []byte
	if err := s.View(t.Context(), func(tx store.Tx) error {
		b, err := tx.Spec("big")
		got = b
		return err
	}); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back: %v, %d bytes", err, len(got))
	}
}

// TestLargeSpecsAreWrittenAlone: a large spec is a bucket of its own, so
// that storing a job beside it does not write it again. After a job of
// 40 MiB (which maps the file at 64 MiB, so that nothing below remaps
// it), storing one of 8 MiB under the next id allocates bbolt's page
// for it, and one of 1 KiB under the id after that nothing that grows
// with either. Before, bbolt wrote the whole leaf of the three again
// each time (97.3 and 97.6 MiB allocated; it fails there). Every spec reads
// back, the store check finds nothing, a removed job's spec bucket goes
// with it, and the store opens again.
func TestLargeSpecsAreWrittenAlone(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	a, aSpec := largeSpec("job-a", 40<<20)
	if n := createAllocates(t, s, a, aSpec); n == 0 {
		t.Fatal("nothing allocated")
	}
	b, bSpec := largeSpec("job-b", 8<<20)
	n := createAllocates(t, s, b, bSpec)
	t.Logf("8 MiB spec beside a 40 MiB one: %.1f MiB allocated", float64(n)/(1<<20))
	if n > 12<<20 {
		t.Errorf("%.1f MiB allocated to store an 8 MiB spec beside a 40 MiB one", float64(n)/(1<<20))
	}
	c, cSpec := largeSpec("job-c", 1<<10)
	n = createAllocates(t, s, c, cSpec)
	t.Logf("1 KiB spec beside them: %.1f MiB allocated", float64(n)/(1<<20))
	if n > 1<<20 {
		t.Errorf("%.1f MiB allocated to store a 1 KiB spec beside 40 and 8 MiB ones", float64(n)/(1<<20))
	}
	err := s.View(t.Context(), func(tx store.Tx) error {
		for id, want := range map[string][]byte{"job-a": aSpec, "job-b": bSpec, "job-c": cSpec} {
			if got, err := tx.Spec(id); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %v, %d bytes", id, err, len(got))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Check(t.Context()); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check: %+v %v", rep, err)
	}
	b.State = lifecycle.Failed
	if err := update(t, s, func(tx store.Tx) error {
		if err := tx.PutJob(b); err != nil {
			return err
		}
		_, err := tx.RemoveJob("job-b", time.Unix(1700000100, 0).UTC())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.View(t.Context(), func(tx store.Tx) error {
		if _, err := tx.Spec("job-b"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a removed job's spec: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Check(t.Context()); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check after the removal: %+v %v", rep, err)
	}
	// The page check of the next open walks the spec's bucket too.
	s.Close()
	s = open(t, dir)
	if err := s.View(t.Context(), func(tx store.Tx) error {
		if got, err := tx.Spec("job-a"); err != nil || !bytes.Equal(got, aSpec) {
			t.Errorf("job-a after a reopen: %v, %d bytes", err, len(got))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
