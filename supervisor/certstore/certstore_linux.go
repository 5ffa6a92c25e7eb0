// Package certstore keeps the certificates of verify jobs that name them
// by reference (protocol.CertificateRef): one file per certificate under
// <home>/certificates, named by its SHA-256, written once and never
// changed (docs/supervisor.md, "Certificates by reference").
package certstore

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// DirName is the store's directory in the home.
const DirName = "certificates"

// Path is the store's directory in home.
func Path(home string) string { return filepath.Join(home, DirName) }

// ErrMissing: the store holds no certificate of the ref's digest.
var ErrMissing = errors.New("certificate not stored")

// ErrMismatch: the bytes given or stored are not the ref's (another
// size or another digest).
var ErrMismatch = errors.New("certificate differs from its reference")

// Store is the directory of one home's certificates.
type Store struct {
	dir *artifacts.Dir
}

// Open opens home's store, making its directory (0700, and the home's)
// when there is none.
func Open(home string) (*Store, error) {
	path := Path(home)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("certstore: mkdir %s: %w", home, err)
	}
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("certstore: mkdir %s: %w", path, err)
	}
	dir, err := artifacts.OpenDir(path)
	if err != nil {
		return nil, fmt.Errorf("certstore: open %s: %w", path, err)
	}
	return &Store{dir: dir}, nil
}

// Close closes the store's directory.
func (s *Store) Close() error { return s.dir.Close() }

// Path is the file a ref's certificate is stored in.
func (s *Store) Path(ref protocol.CertificateRef) string {
	return filepath.Join(s.dir.Path(), ref.Hex())
}

// Put stores the certificate ref names, reading its bytes from r: through
// an artifacts.Writer (a temporary file, fsync, rename, fsync of the
// directory), hashed as they are copied, at most ref.Size bytes, and
// published only when their length and digest are the ref's
// (ErrMismatch otherwise, nothing published). A certificate already
// stored is not written again, and r is not read: it reports whether
// this call wrote it.
//
// A certificate already stored has its modification time set to now: gc
// removes a certificate no job names only once it has been stored that
// long (Stored), so one stored again for a new submission is as young as
// a new one.
func (s *Store) Put(ref protocol.CertificateRef, r io.Reader) (bool, error) {
	if err := s.Check(ref); err == nil {
		return false, s.touch(ref)
	} else if !errors.Is(err, ErrMissing) {
		return false, err
	}
	w, err := s.dir.Create(ref.Hex(), int64(min(ref.Size, math.MaxInt64)))
	if errors.Is(err, artifacts.ErrExists) {
		return false, s.checkAndTouch(ref)
	}
	if err != nil {
		return false, fmt.Errorf("certstore: store %s: %w", ref.Hex(), err)
	}
	if _, err := w.ReadFrom(r); err != nil {
		w.Abort()
		if errors.Is(err, artifacts.ErrTooLarge) {
			return false, fmt.Errorf("certstore: store %s: more than its %d bytes: %w", ref.Hex(), ref.Size, ErrMismatch)
		}
		return false, fmt.Errorf("certstore: store %s: %w", ref.Hex(), err)
	}
	if n, sum := w.Digest(); uint64(n) != ref.Size || sum != ref.SHA256 {
		w.Abort()
		return false, fmt.Errorf("certstore: store %s: %d bytes of digest %x: %w", ref.Hex(), n, sum, ErrMismatch)
	}
	if _, err := w.Commit(); err != nil {
		if errors.Is(err, artifacts.ErrExists) {
			// Stored meanwhile by another writer, under its digest.
			return false, s.checkAndTouch(ref)
		}
		return false, fmt.Errorf("certstore: store %s: %w", ref.Hex(), err)
	}
	return true, nil
}

// PutFile stores the file f (open, read from its start) of at most
// limit bytes: a first pass hashes it (the digest names the stored file,
// and is checked again as the second pass copies it), and a certificate
// already stored is not copied. It returns the file's ref; a file over
// limit is protocol.CodeArtifactTooLarge, an empty one
// protocol.CodeInvalidJob.
func (s *Store) PutFile(f io.ReadSeeker, limit uint64) (protocol.CertificateRef, error) {
	ref, err := refOf(f, limit)
	if err != nil {
		return ref, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return ref, fmt.Errorf("certstore: rewind: %w", err)
	}
	_, err = s.Put(ref, f)
	return ref, err
}

// refOf is the ref of what r holds: its size (at most limit) and
// SHA-256, read streamed.
func refOf(r io.Reader, limit uint64) (protocol.CertificateRef, error) {
	var ref protocol.CertificateRef
	h := sha256.New()
	// One byte past the limit tells a file that grew past it.
	n, err := io.Copy(h, io.LimitReader(r, int64(min(limit, math.MaxInt64-1))+1))
	if err != nil {
		return ref, fmt.Errorf("certstore: read: %w", err)
	}
	switch {
	case uint64(n) > limit:
		return ref, protocol.Errorf(protocol.CodeArtifactTooLarge, "certificate: more than %d bytes", limit)
	case n == 0:
		return ref, protocol.Errorf(protocol.CodeInvalidJob, "certificate: empty")
	}
	ref.Size = uint64(n)
	h.Sum(ref.SHA256[:0])
	return ref, nil
}

// Check is admission's look at a ref: a regular file under its digest
// with its size (fstat; the bytes are checked as they are verified).
// ErrMissing when there is none, ErrMismatch when its size differs.
func (s *Store) Check(ref protocol.CertificateRef) error {
	r, err := s.Open(ref)
	if err != nil {
		return err
	}
	return r.Close()
}

// Open opens the ref's certificate for reading, at most ref.Size bytes
// (a file that grows past them fails its read with
// artifacts.ErrTooLarge). Nothing is read: the caller hashes what it
// reads and compares.
func (s *Store) Open(ref protocol.CertificateRef) (*artifacts.Reader, error) {
	r, err := s.dir.OpenFile(ref.Hex(), int64(min(ref.Size, math.MaxInt64)))
	switch {
	case errors.Is(err, artifacts.ErrNotFound):
		return nil, fmt.Errorf("certstore: %s: %w", ref.Hex(), ErrMissing)
	case errors.Is(err, artifacts.ErrTooLarge):
		return nil, fmt.Errorf("certstore: %s: stored with more than its %d bytes: %w", ref.Hex(), ref.Size, ErrMismatch)
	case err != nil:
		return nil, fmt.Errorf("certstore: %w", err)
	}
	if r.Size() != int64(ref.Size) {
		r.Close()
		return nil, fmt.Errorf("certstore: %s: stored with %d bytes, its ref says %d: %w", ref.Hex(), r.Size(), ref.Size, ErrMismatch)
	}
	return r, nil
}

// Remove removes the ref's certificate; one that is not stored is no
// error.
func (s *Store) Remove(ref protocol.CertificateRef) error {
	err := os.Remove(s.Path(ref))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("certstore: %w", err)
	}
	return nil
}

// checkAndTouch is Check, then touch when the certificate is there.
func (s *Store) checkAndTouch(ref protocol.CertificateRef) error {
	if err := s.Check(ref); err != nil {
		return err
	}
	return s.touch(ref)
}

// touch sets the stored certificate's modification time to now.
func (s *Store) touch(ref protocol.CertificateRef) error {
	now := time.Now()
	if err := os.Chtimes(s.Path(ref), now, now); err != nil {
		return fmt.Errorf("certstore: touch %s: %w", ref.Hex(), err)
	}
	return nil
}

// Entry is one stored certificate: its digest (hex, its file's name) and
// when it was last stored (Put).
type Entry struct {
	SHA256 string
	Stored time.Time
}

// Stored lists the stored certificates: the files named by 64 hex
// digits (a writer's temporary files and anything else are not
// certificates and are left alone).
func (s *Store) Stored() ([]Entry, error) {
	ents, err := os.ReadDir(s.dir.Path())
	if err != nil {
		return nil, fmt.Errorf("certstore: list %s: %w", s.dir.Path(), err)
	}
	var out []Entry
	for _, e := range ents {
		if !isDigestName(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("certstore: stat %s: %w", e.Name(), err)
		}
		out = append(out, Entry{SHA256: e.Name(), Stored: info.ModTime()})
	}
	return out, nil
}

// isDigestName reports whether name is 64 lower-case hex digits, the
// name Put gives a certificate (protocol.CertificateRef.Hex).
func isDigestName(name string) bool {
	if len(name) != 2*sha256.Size {
		return false
	}
	for _, c := range []byte(name) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
