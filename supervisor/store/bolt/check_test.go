package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func TestCheckOfASoundStore(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	populate(t, s, 30)
	live, err := s.Check(context.Background())
	if err != nil || len(live.Problems) != 0 {
		t.Fatalf("live check: %+v %v", live, err)
	}
	if live.Jobs != 30 || live.Attempts != 24 || live.Queued != 6 || live.Events == 0 || live.Schema != SchemaVersion {
		t.Fatalf("live check counted %+v", live)
	}
	if _, err := CheckFile(filepath.Join(dir, FileName), 20*time.Millisecond); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("CheckFile while the store is open: %v, want ErrLocked", err)
	}
	s.Close()
	off, err := CheckFile(filepath.Join(dir, FileName), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	live.File, off.File = "", ""
	if len(off.Problems) != 0 || !reflect.DeepEqual(off, live) {
		t.Fatalf("offline check %+v differs from the live one %+v", off, live)
	}
}

// Records that are sealed (so no byte is damaged) but break the store's
// invariants together are each reported.
func TestCheckReportsBrokenInvariants(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	populate(t, s, 12)
	put := func(bucket []byte, key, payload []byte) {
		t.Helper()
		if err := s.db.Update(func(tx *bbolt.Tx) error {
			return tx.Bucket(bucket).Put(key, seal(bucket, key, payload))
		}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(bucket, key []byte) {
		t.Helper()
		if err := s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Delete(key) }); err != nil {
			t.Fatal(err)
		}
	}
	put(bucketAccepted, []byte("job-0002"), binary.BigEndian.AppendUint32(nil, 7)) // an accepted job's index, wrong
	del(bucketSpecs, []byte("job-0003"))
	put(bucketQueueIdx, []byte("job-0004"), queueKey(0, 99)) // an accepted job still queued, no entry
	put(bucketEvents, eventKey("ghost", 1), []byte(`{"job":"ghost","seq":1,"to":"queued"}`))
	put(bucketAttempts, attemptKey("job-0006", 5), []byte(`{"job":"job-0006","n":5,"state":"queued"}`))
	put(bucketSubmitted, seqKey(99), []byte("job-0007")) // job-0007's seq is 8
	del(bucketSubmitted, seqKey(9))                      // job-0008's entry
	put(bucketTombstones, []byte("job-0009"), []byte(`{"id":"job-0009","spec_digest":"d","state":"failed"}`))
	put(bucketLive, []byte("job-0011"), nil) // an ended job
	del(bucketLive, []byte("job-0010"))      // a queued one
	put(bucketTombstones, []byte("bad"), []byte(`{"id":"other","spec_digest":"d","state":"failed"}`))
	rep, err := s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rep.Problems, "\n")
	for _, want := range []string{
		"job job-0002 is accepted with attempt 1, the accepted index says 7",
		"job job-0003 has no spec",
		"job job-0004 is accepted and still queued",
		"job job-0004: its queue index points at",
		"events of ghost have no job",
		"attempt job-0006/5: the job has prepared 1",
		"the submitted index names job-0007 at seq 99, which is not that job",
		"job job-0008 (seq 9) is not in the submitted index",
		"job job-0009 has a tombstone",
		`tombstones/"bad": names job "other"`,
		"job job-0010 is queued, and the live index says it has ended",
		"and the live index says it has not ended",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the check misses %q in:\n%s", want, all)
		}
	}
}

func TestBackupWhileInUse(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	populate(t, s, 20)
	ctx := context.Background()
	dst := filepath.Join(t.TempDir(), "backup.db")
	rep, err := WriteBackup(dst, func(w io.Writer) (int64, error) { return s.Backup(ctx, w) })
	if err != nil || rep.Jobs != 20 || len(rep.Problems) != 0 || rep.File != dst {
		t.Fatalf("backup: %+v %v", rep, err)
	}
	// The copy opens as a store of its own with the same records.
	want := contents(t, s)
	bdir := t.TempDir()
	copyTo(t, dst, filepath.Join(bdir, FileName))
	// All but the meta record, which says the copy is a backup
	// (TestBackupSaysItIsOne).
	got := contents(t, open(t, bdir))
	delete(got, string(bucketMeta))
	delete(want, string(bucketMeta))
	if !reflect.DeepEqual(got, want) {
		t.Fatal("the backup differs from the store")
	}
	if _, err := WriteBackup(dst, func(w io.Writer) (int64, error) { return s.Backup(ctx, w) }); !errors.Is(err, os.ErrExist) {
		t.Fatalf("a second backup over the first: %v", err)
	}
	// A copy cut short is refused, and leaves nothing behind.
	short := filepath.Join(t.TempDir(), "short.db")
	_, err = WriteBackup(short, func(w io.Writer) (int64, error) {
		var buf bytes.Buffer
		if _, err := s.Backup(ctx, &buf); err != nil {
			return 0, err
		}
		n, err := w.Write(buf.Bytes()[:buf.Len()/2])
		return int64(n), err
	})
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("a truncated copy: %v, want ErrCorrupt", err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(short)); len(ents) != 0 {
		t.Fatalf("a refused backup left %v", ents)
	}
	s.Close()
	// Without an owner, the file itself is copied.
	off := filepath.Join(t.TempDir(), "offline.db")
	if _, err := WriteBackup(off, func(w io.Writer) (int64, error) { return BackupFile(filepath.Join(dir, FileName), w) }); err != nil {
		t.Fatal(err)
	}
}

func copyTo(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
