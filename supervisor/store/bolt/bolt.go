// Package bolt is the local store driver: the home's one bbolt file,
// <home>/store/supervisor.db, holding the job store (store.Store) and the
// fencing store (store.Fencing) of supervisor/store, both in one
// transaction when asked (store.Local). Its file format, its migrations,
// its check, backup and restore are this package's (docs/store.md).
package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

var (
	bucketMeta     = []byte("meta")
	bucketJobs     = []byte("jobs")
	bucketSpecs    = []byte("specs")
	bucketAttempts = []byte("attempts")
	bucketEvents   = []byte("events")
	bucketQueue    = []byte("queue")
	bucketQueueIdx = []byte("queue_index")
	bucketAccepted = []byte("accepted")
	// Schema 4: jobs in submission order, the jobs that have not ended,
	// and the tombstones of removed jobs.
	bucketSubmitted  = []byte("submitted")
	bucketLive       = []byte("live")
	bucketTombstones = []byte("tombstones")
	keyMeta          = []byte("meta")
	allBuckets       = append([][]byte{bucketMeta, bucketJobs, bucketSpecs, bucketAttempts, bucketEvents, bucketQueue, bucketQueueIdx, bucketAccepted,
		bucketSubmitted, bucketLive, bucketTombstones}, fencingBuckets...)
)

// FileName is the database file inside the supervisor's home.
const FileName = "supervisor.db"

// Store is the local store: one bbolt file with an exclusive lock, so one
// supervisor owns a home at a time.
type Store struct {
	db       *bbolt.DB
	path     string
	jobs     *decoded[store.Job]
	attempts *decoded[store.Attempt]
	// file is what the check before opening found.
	file *fileReport

	// broken is set once bbolt panicked on the file: nothing it says
	// afterwards can be trusted, so every later call fails with it.
	brokenMu sync.Mutex
	broken   error

	// trust is the neuron key signed records are checked against, and
	// the one this process signs with (trust.go), whose record key tags
	// and checks the fencing records (authenticated.go); tags remembers
	// records whose tag verified.
	trust *store.Trust
	tags  tagCache
	batch batcher
	fc    fencingCaches
}

// Options of OpenWith.
type Options struct {
	// LockWait is how long to wait for another process's lock.
	LockWait time.Duration
	// Trust is the neuron's public key (from the vault): every signed
	// record is checked against it when read and when written. Without
	// it, reading a signed record fails with ErrUntrusted.
	Trust *neuron.PublicKey
	// Keys is the trust to check signed records with, shared with the
	// home's other stores (nil: one of the store's own). Trust, when
	// given, is set on it.
	Keys *store.Trust
	// NoSync skips fsync on commit. For tests that reopen a store many
	// times: a process that dies loses nothing (the data is in the page
	// cache), a machine that dies may. Never for a home.
	NoSync bool
	// SyncFreelist keeps bbolt's free-page list in the file: each commit
	// writes it (a page or two) and an open reads it, instead of walking
	// every page of the store to rebuild it (~1.4 ms of CPU per thousand
	// jobs kept). For a supervisor that opens the store for few commits
	// (a one-shot run); a daemon, which commits many times per open,
	// rebuilds it once per boot instead. A store opened both ways is
	// fine: bbolt rebuilds a list that was not kept, and an open that
	// keeps it writes it at once.
	SyncFreelist bool
}

// Open opens (creating if needed) the store in dir. A second process
// on the same dir gets ErrLocked after lockWait. A damaged file is refused
// with a *CorruptError (ErrCorrupt) naming the page or record, before
// bbolt maps it (pagecheck.go).
func Open(dir string, lockWait time.Duration) (*Store, error) {
	return OpenWith(dir, Options{LockWait: lockWait})
}

// OpenWith is Open with options.
func OpenWith(dir string, opts Options) (*Store, error) {
	lockWait := opts.LockWait
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create store dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	if lockWait <= 0 {
		lockWait = 50 * time.Millisecond
	}
	// No freelist sync by default (as etcd runs bbolt): a commit does not
	// rewrite the free-page list, which open rebuilds by scanning the
	// pages instead; the map freelist keeps that scan and allocation
	// cheap. See Options.SyncFreelist.
	s, err := openFile(path, &bbolt.Options{Timeout: lockWait, NoFreelistSync: !opts.SyncFreelist, FreelistType: bbolt.FreelistMapType, NoSync: opts.NoSync})
	if err != nil {
		return nil, err
	}
	if opts.Keys != nil {
		s.trust = opts.Keys
	}
	if opts.Trust != nil {
		if err := s.trust.Set(*opts.Trust); err != nil {
			s.db.Close()
			return nil, err
		}
	}
	if err := s.init(s.file); err != nil {
		s.db.Close()
		return nil, err
	}
	// Copies a live check left when its process died (check.go); the
	// lock is ours, so no check of this store runs now.
	stale, _ := filepath.Glob(filepath.Join(dir, ".check-*.db"))
	for _, f := range stale {
		os.Remove(f)
	}
	return s, nil
}

// openFile opens path with bbolt, through openLockedAndChecked: the file
// is locked and checked before bbolt maps it.
func openFile(path string, opts *bbolt.Options) (*Store, error) {
	var checked *checkedFile
	opts.OpenFile = func(name string, flag int, mode os.FileMode) (*os.File, error) {
		f, err := openLockedAndChecked(name, flag, mode, opts.Timeout)
		checked = f
		if err != nil {
			return nil, err
		}
		return f.f, nil
	}
	db, err := openChecked(path, opts)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path, file: checked.report, jobs: newDecoded((*store.Job).Clone), attempts: newDecoded((*store.Attempt).Clone), fc: newFencingCaches(), trust: store.NewTrust()}
	s.batch.s = s
	return s, nil
}

// checkedFile is a store file opened, locked and checked for bbolt.
type checkedFile struct {
	f      *os.File
	report *fileReport
}

// openLockedAndChecked is bbolt's OpenFile: it takes the lock bbolt would
// take (bbolt's own flock on the same descriptor then succeeds at once),
// so that nothing writes the file between the check and its use.
func openLockedAndChecked(name string, flag int, mode os.FileMode, wait time.Duration) (*checkedFile, error) {
	f, err := os.OpenFile(name, flag, mode)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	how := unix.LOCK_EX
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		how = unix.LOCK_SH
	}
	start := time.Now()
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			break
		}
		deadline := start.Add(wait)
		if how == unix.LOCK_EX && errors.Is(err, unix.EWOULDBLOCK) && wait < readersWait && readersOnly(name) {
			// Only reads hold the file now (OpenReadOnly: the CLI's
			// reads of a home no daemon owns, each one request long):
			// wait for them rather than fail as if another supervisor
			// owned it.
			deadline = start.Add(readersWait)
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("open store %s: %w (is another cyber-supervisor running on this home?)", name, store.ErrLocked)
			}
			return nil, fmt.Errorf("lock store %s: %w", name, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	rep, err := checkFile(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &checkedFile{f: f, report: rep}, nil
}

// readersWait bounds how long an exclusive open waits for shared
// holders (readers) to let go: readers hold the lock for one read.
const readersWait = 10 * time.Second

// readersOnly reports whether the locks on the file at name are shared
// ones only (a shared lock of its own is granted): readers, not a
// supervisor that owns it. The probe's lock goes with its descriptor.
func readersOnly(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) == nil
}

// openChecked is bolt.Open, with a panic (which the check should have made
// impossible) turned into ErrCorrupt instead of a crash.
func openChecked(path string, opts *bbolt.Options) (db *bbolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, &store.CorruptError{File: path, Reason: fmt.Sprintf("bbolt failed on the file: %v", r)}
		}
	}()
	db, err = bbolt.Open(path, 0o600, opts)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: %w (is another cyber-supervisor running on this home?)", path, store.ErrLocked)
	}
	var ce *store.CorruptError
	if err != nil && !errors.As(err, &ce) && !errors.Is(err, store.ErrLocked) {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return db, err
}

func (s *Store) init(rep *fileReport) error {
	// A store that is already whole at this schema needs no write: a
	// read transaction says so, and opening costs no commit.
	ready, err := s.whole(rep)
	if err != nil || ready {
		return err
	}
	return s.update(func(tx *bbolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		raw := tx.Bucket(bucketMeta).Get(keyMeta)
		if raw == nil {
			m := store.Meta{SchemaVersion: SchemaVersion, Created: time.Now().UTC()}
			return putJSON(tx.Bucket(bucketMeta), bucketMeta, keyMeta, m)
		}
		m, sealed, err := s.readMeta(raw)
		if err != nil {
			return err
		}
		mismatch := &store.CorruptError{File: s.path, Bucket: string(bucketMeta), Key: keyMeta,
			Reason: fmt.Sprintf("schema %d with a record format that does not match it", m.SchemaVersion)}
		switch m.SchemaVersion {
		case SchemaVersion:
			if !sealed || !rep.Sealed {
				return mismatch
			}
			return nil
		case 1, 2, 3, 4, 5, 6, 7:
			if sealed != (m.SchemaVersion >= 3) {
				return mismatch
			}
			// In the opening transaction: all of it or nothing.
			if err := migrate(tx, m); err != nil {
				return fmt.Errorf("migrate %s from schema %d to %d: %w", s.path, m.SchemaVersion, SchemaVersion, err)
			}
			return nil
		default:
			return fmt.Errorf("%w: %s has version %d, this build reads %d (and migrates 1 to 7)", store.ErrSchema, s.path, m.SchemaVersion, SchemaVersion)
		}
	})
}

// whole reports whether the store has every bucket and a sealed meta
// record of this build's schema: nothing to create or migrate.
func (s *Store) whole(rep *fileReport) (bool, error) {
	ready := false
	err := s.view(func(tx *bbolt.Tx) error {
		for _, b := range allBuckets {
			if tx.Bucket(b) == nil {
				return nil
			}
		}
		raw := tx.Bucket(bucketMeta).Get(keyMeta)
		if raw == nil {
			return nil
		}
		m, sealed, err := s.readMeta(raw)
		ready = err == nil && sealed && rep.Sealed && m.SchemaVersion == SchemaVersion
		return nil
	})
	return ready, err
}

// readMeta decodes the meta record, sealed (schema 3 on) or not (schemas 1
// and 2 stored plain JSON, which a seal's trailing bytes never are).
func (s *Store) readMeta(raw []byte) (store.Meta, bool, error) {
	var m store.Meta
	if json.Valid(raw) {
		if err := json.Unmarshal(raw, &m); err != nil {
			return m, false, &store.CorruptError{File: s.path, Bucket: string(bucketMeta), Key: keyMeta, Reason: err.Error()}
		}
		return m, false, nil
	}
	payload, ok := unseal(bucketMeta, keyMeta, raw)
	if !ok {
		return m, true, &store.CorruptError{File: s.path, Bucket: string(bucketMeta), Key: keyMeta, Reason: "the record fails its checksum"}
	}
	if err := json.Unmarshal(payload, &m); err != nil {
		return m, true, &store.CorruptError{File: s.path, Bucket: string(bucketMeta), Key: keyMeta, Reason: err.Error()}
	}
	return m, true, nil
}

// Path of the database file.
func (s *Store) Path() string { return s.path }

func (s *Store) Close() error { return s.db.Close() }

func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	return s.updateTx(ctx, func(t *boltTx) error { return fn(t) })
}

func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	return s.viewTx(ctx, func(t *boltTx) error { return fn(t) })
}

// updateTx and viewTx run fn on a transaction of the file, which every
// view of the store (jobs, fencing, both) is.
func (s *Store) updateTx(ctx context.Context, fn func(*boltTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.update(func(tx *bbolt.Tx) error { return fn(&boltTx{tx: tx, s: s}) })
}

func (s *Store) viewTx(ctx context.Context, fn func(*boltTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.view(func(tx *bbolt.Tx) error { return fn(&boltTx{tx: tx, s: s}) })
}

func (s *Store) update(fn func(*bbolt.Tx) error) error {
	return s.guard(func() error { return s.db.Update(fn) })
}

func (s *Store) view(fn func(*bbolt.Tx) error) error {
	return s.guard(func() error { return s.db.View(fn) })
}

// panickedInBbolt, called from a deferred recover, says whether the panic
// was raised in bbolt's code (a fault on its mapping included).
func panickedInBbolt() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	afterPanic := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			afterPanic = true
		case afterPanic && !strings.HasPrefix(f.Function, "runtime."):
			return strings.HasPrefix(f.Function, "go.etcd.io/bbolt")
		}
		if !more {
			return false
		}
	}
}

// guard is the store's boundary: bbolt trusts the file, and although the
// open check leaves it only checked pages to read, damage that appears
// while the store is open (another writer, a failing disk) must not crash
// the supervisor. A panic in bbolt, or a fault on its mapping, becomes
// ErrCorrupt; bbolt's own deferred rollback has released the transaction
// by then, and the store refuses everything afterwards.
func (s *Store) guard(fn func() error) (err error) {
	s.brokenMu.Lock()
	broken := s.broken
	s.brokenMu.Unlock()
	if broken != nil {
		return broken
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if !panickedInBbolt() {
				panic(r) // a bug of the caller's, not damage: crash loudly
			}
			ce := &store.CorruptError{File: s.path, Reason: fmt.Sprintf("bbolt failed on the file: %v", r)}
			s.brokenMu.Lock()
			s.broken = ce
			s.brokenMu.Unlock()
			err = ce
		}
	}()
	return fn()
}

// checkSigned verifies a signed record read as raw (or about to be
// written as raw) against the store's trust.
func (s *Store) checkSigned(what string, st *neuron.Statement, sig []byte, raw []byte) error {
	return s.trust.CheckEncoded(what, st, sig, raw)
}

// Trust is the trust the store checks signed records with.
func (s *Store) Trust() *store.Trust { return s.trust }

// Trusted is the public key signed records are checked against (nil:
// none).
func (s *Store) Trusted() *neuron.PublicKey { return s.trust.Key() }
