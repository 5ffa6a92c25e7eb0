package bolt

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/fsync"

	bbolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// WriteBackup writes a store copy to path: copy fills a temporary file
// beside it, which is synced, marked as a backup (Meta.Backup), checked
// as a store (CheckFile: a copy cut short or damaged on the way is
// refused), and only then given its name, without replacing anything
// already there. It returns the copy's check.
func WriteBackup(path string, copy func(io.Writer) (int64, error)) (*CheckReport, error) {
	dir := filepath.Dir(path)
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("backup %s: %w", path, os.ErrExist)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	name := tmp.Name()
	done := false
	defer func() {
		if !done {
			os.Remove(name)
		}
	}()
	if _, err := copy(tmp); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("backup %s: copy: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("backup %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	// The copy says it is one: a start on it, however it comes back
	// into a home, fences it (restore.go).
	if err := markBackup(name, time.Now()); err != nil {
		return nil, fmt.Errorf("backup %s: the copy does not check: %w", path, err)
	}
	rep, err := CheckFile(name, time.Second)
	if err != nil {
		return nil, fmt.Errorf("backup %s: the copy does not check: %w", path, err)
	}
	if len(rep.Problems) > 0 {
		return rep, fmt.Errorf("backup %s: the copy has %d problems: %s", path, len(rep.Problems), rep.Problems[0])
	}
	if err := unix.Renameat2(unix.AT_FDCWD, name, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE); err != nil {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	done = true
	rep.File = path
	if err := fsync.Dir(dir); err != nil {
		// The copy is whole and named; only its name may not survive a
		// crash, which the caller must hear rather than be told "done".
		return rep, fmt.Errorf("backup %s: written, but its name may not survive a crash: %w", path, err)
	}
	return rep, nil
}

// BackupFile copies the store file at path (no supervisor owning it) into
// w: OpenReadOnly, then one read transaction.
func BackupFile(path string, w io.Writer) (int64, error) {
	s, err := OpenReadOnly(path, time.Second)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	var n int64
	err = s.view(func(tx *bbolt.Tx) error {
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}
