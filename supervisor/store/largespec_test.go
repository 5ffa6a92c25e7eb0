package store

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// largeSpec is a job of a frozen spec of size bytes (a verify job's,
// whose artifact travels inline), with room for its record's checksum.
func largeSpec(id string, size int) (*Job, []byte) {
	spec := make([]byte, size, size+sealSize)
	for i := range spec {
		spec[i] = 'a' + byte(i%26)
	}
	now := time.Unix(1700000000, 0).UTC()
	return &Job{ID: id, SpecDigest: specDigest(spec), State: lifecycle.Queued, Seq: testSeq.Add(1),
		Created: now, Updated: now, Retry: RetryPolicy{MaxAttempts: 1}}, spec
}

// createAllocates creates j with spec in s and returns what the
// transaction allocated.
func createAllocates(t *testing.T, s *Bolt, j *Job, spec []byte) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := update(t, s, func(tx Tx) error { return tx.CreateJob(j, spec) })
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
	s, err := OpenBoltWith(t.TempDir(), Options{LockWait: 20 * time.Millisecond, NoSync: true})
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
	if err := s.View(t.Context(), func(tx Tx) error {
		b, err := tx.Spec("big")
		got = b
		return err
	}); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back: %v, %d bytes", err, len(got))
	}
}
