package bolt

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// An open for writing waits for readers (OpenReadOnly holds the shared
// lock for a read) rather than failing as if another supervisor owned
// the file; a writer that owns it still fails the next one after its
// lock wait.
func TestWriterWaitsForReaders(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	path := filepath.Join(dir, FileName)
	r, err := OpenReadOnlyWith(path, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		w, err := Open(dir, 20*time.Millisecond)
		if err == nil {
			defer w.Close()
			// While the writer owns the file, a reader is refused.
			_, rerr := OpenReadOnlyWith(path, 20*time.Millisecond, nil)
			if !errors.Is(rerr, store.ErrLocked) {
				err = errors.Join(errors.New("a read while the writer owns the file was not refused"), rerr)
			}
			// And so is another writer, after its own wait.
			if _, werr := Open(dir, 20*time.Millisecond); !errors.Is(werr, store.ErrLocked) {
				err = errors.Join(errors.New("a second writer was not refused"), werr)
			}
		}
		opened <- err
	}()
	// The writer's lock wait (20 ms) passes many times over while the
	// reader holds the file; it must still be waiting, not refused.
	select {
	case err := <-opened:
		t.Fatalf("the writer gave up while only a reader held the file: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	r.Close()
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
}

// A store that is not at this build's schema is refused by a read-only
// open, which may not migrate it.
func TestReadOnlyRefusesAStoreToMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := writeEmptyBolt(path); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnlyWith(path, time.Second, nil); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("a store without buckets: %v, want ErrSchema", err)
	}
}

// writeEmptyBolt makes a bbolt file with no buckets: a store of no
// schema (what a migration would fill in).
func writeEmptyBolt(path string) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	return db.Close()
}
