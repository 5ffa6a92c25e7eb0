package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/fsync"
)

// The files a home keeps beside its store, outside it, that say what the
// store must not be older than (restore.go): the restore mark and the
// high-water mark; and the shared mark, which says what the home's
// sandboxes cannot tell.

// RestoreMark is what `store restore` writes into the home before it puts
// a file in place of the store: the next start fences whatever it finds.
type RestoreMark struct {
	From string    `json:"from"`
	At   time.Time `json:"at"`
}

// highWater is the home's record of how far its store went: the last boot
// a daemon started on it.
type highWater struct {
	Boots uint64 `json:"boots,string"`
}

// RestoreMarkPath is where the restore mark of a home is kept (outside
// the store file, beside it).
func RestoreMarkPath(home string) string { return filepath.Join(storeDir(home), "supervisor.restored") }

// sharedMark is written the first time the home serves on a shared job
// store (etcd), before any of that store's jobs can leave a sandbox in
// the home: from then on its sandboxes may hold jobs its own store never
// knew, under ids its own store may use as well, so they are no evidence
// of a restore of its own store.
type sharedMark struct {
	At time.Time `json:"at"`
}

// SharedMarkPath is the file of the home's shared mark.
func SharedMarkPath(home string) string { return filepath.Join(storeDir(home), "supervisor.shared") }

// markShared writes the shared mark, durably, unless the home has one.
func markShared(home string) error {
	if _, err := os.Stat(SharedMarkPath(home)); err == nil {
		return nil
	}
	return writeDurably(SharedMarkPath(home), sharedMark{At: time.Now().UTC()})
}

// HighWaterPath is the file of the home's high-water mark.
func HighWaterPath(home string) string { return filepath.Join(storeDir(home), "supervisor.high-water") }

// MarkRestored writes the restore mark, durably: called by `store
// restore` before the file is moved, so that a crash at any later point
// is fenced by the next start (at worst the previous store, fenced for
// nothing: the safe side).
func MarkRestored(home, from string) error {
	return writeDurably(RestoreMarkPath(home), RestoreMark{From: from, At: time.Now().UTC()})
}

// writeDurably writes v's JSON to path through a temporary file: synced,
// renamed into place, the directory synced.
func writeDurably(path string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return fsync.Dir(dir)
}

// readJSONFile reads path into v; false when there is no such file.
func readJSONFile(path string, v any) (bool, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return true, nil
}

// writeHighWater records, durably, that the home's store reached boot
// boots: a copy of the store from before this boot, put back, reads
// older than its home.
func writeHighWater(home string, boots uint64) error {
	var hw highWater
	if _, err := readJSONFile(HighWaterPath(home), &hw); err == nil && hw.Boots >= boots {
		return nil
	}
	return writeDurably(HighWaterPath(home), highWater{Boots: boots})
}

// restoreDone removes the restore mark once the fence that answered it
// is committed.
func restoreDone(home string) error {
	err := os.Remove(RestoreMarkPath(home))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return fsync.Dir(storeDir(home))
}
