package bolt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/internal/fsync"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// What a restore needs of the local store (docs/store.md, "Recovering";
// the reasoning in docs/design/restore.md): backup copies that say they
// are copies, a file put in place of the home's store with the current
// one kept aside, and the invocation sequence moved past every seq the
// lost history may have used.

// RestoreTx is the local store's transaction as a restore's fence uses
// it (boltTx implements it; a store shared by several hosts has no
// restore of its own: its fencing records are the home's).
type RestoreTx interface {
	store.Tx
	// InvocationSeq is the last invocation seq handed out.
	InvocationSeq() uint64
	// SkipInvocationSeqs makes every later invocation's seq above next:
	// the invocations a restored store forgot had seqs (and so ids, and
	// operation ids) after its own, which must not be handed out again.
	SkipInvocationSeqs(next uint64) error
	// ForgetJob leaves the tombstone of a job the store does not know
	// (Tombstone.Restored): a restored store forgot it, its sandbox says
	// it ran, and its id is never used again. Nothing for a job the store
	// knows or has a tombstone of.
	ForgetJob(id string, at time.Time) error
}

func (t *boltTx) InvocationSeq() uint64 {
	return t.tx.Bucket(bucketInvocations).Sequence()
}

func (t *boltTx) SkipInvocationSeqs(next uint64) error {
	b := t.tx.Bucket(bucketInvocations)
	if next <= b.Sequence() {
		return nil
	}
	return b.SetSequence(next)
}

func (t *boltTx) ForgetJob(id string, at time.Time) error {
	k := []byte(id)
	if t.has(bucketJobs, k) || t.has(bucketTombstones, k) {
		return nil
	}
	at = at.UTC()
	return t.bucket(bucketTombstones).putJSON(k, &store.Tombstone{ID: id, State: lifecycle.Unknown, Ended: at, Removed: at, Restored: true})
}

// markBackup writes into the store copy at path that it is a backup of
// the store it was copied from (Meta.Backup): the copy reads as one
// however it comes back into a home, and a start on it fences it. The
// file is checked before bbolt maps it (openFile), as every open is.
func markBackup(path string, taken time.Time) error {
	s, err := openFile(path, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketMeta)
		if b == nil {
			return fmt.Errorf("mark backup %s: %w: no meta bucket", path, store.ErrInvariant)
		}
		m, sealed, err := s.readMeta(b.Get(keyMeta))
		if err != nil {
			return err
		}
		m.Backup = &store.BackupMark{Taken: taken.UTC(), Boot: m.Boot, Boots: m.Boots}
		if sealed {
			return putJSON(b, bucketMeta, keyMeta, m)
		}
		raw, err := json.Marshal(m) // schemas 1 and 2 keep plain JSON
		if err != nil {
			return err
		}
		return b.Put(keyMeta, raw)
	})
}

// InstallStore puts the store file src in place of the store of dir
// (<home>/store/supervisor.db), keeping the file there as aside (a name
// beside it: nothing is deleted). It takes the store's lock first: a
// supervisor that owns the store makes it ErrLocked, and none can open
// it until the new file is in place. The copy is written beside the
// store, synced, and renamed over it; the directory is synced. It
// returns the name the previous file was kept under ("" when there was
// none). before runs under the lock, before anything is moved (the
// caller marks the home there, so that a crash at any later point is
// fenced at the next start).
func InstallStore(dir, src string, before func() error) (aside string, err error) {
	path := filepath.Join(dir, FileName)
	lock, err := os.OpenFile(path, os.O_RDWR, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		lock = nil // no store: nothing to keep aside, nothing to lock
	case err != nil:
		return "", fmt.Errorf("restore %s: %w", path, err)
	default:
		defer lock.Close()
		if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			if errors.Is(err, unix.EWOULDBLOCK) {
				return "", fmt.Errorf("restore %s: %w (stop the daemon first)", path, store.ErrLocked)
			}
			return "", fmt.Errorf("lock store %s: %w", path, err)
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("restore from %s: %w", src, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, "."+FileName+".restore*")
	if err != nil {
		return "", fmt.Errorf("restore %s: %w", path, err)
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return "", fmt.Errorf("restore %s: copy %s: %w", path, src, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("restore %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("restore %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("restore %s: %w", path, err)
	}
	if before != nil {
		if err := before(); err != nil {
			return "", err
		}
	}
	if lock != nil {
		aside = path + ".replaced-" + time.Now().UTC().Format("20060102T150405.000000000Z")
		// A hard link, not a rename: the store's name never stops
		// naming a whole store.
		if err := os.Link(path, aside); err != nil {
			return "", fmt.Errorf("restore %s: keep the current file as %s: %w", path, aside, err)
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("restore %s: %w", path, err)
	}
	done = true
	if err := fsync.Dir(dir); err != nil {
		return aside, fmt.Errorf("restore %s: in place, but its name may not survive a crash: %w", path, err)
	}
	return aside, nil
}
