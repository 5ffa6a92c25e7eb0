package artifacts

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Info describes a published artifact.
type Info struct {
	// Name is the artifact's name relative to its sandbox directory.
	Name string
	// Size is the number of bytes on disk.
	Size int64
	// SHA256 is the lowercase hex SHA-256 of the bytes on disk.
	SHA256 string
}

// Option changes how an artifact is published.
type Option func(*options)

type options struct {
	replace bool
}

// Replace lets a publication replace an existing artifact of the same name
// (atomically: readers see the old or the new file). Without it an existing
// name fails with ErrExists.
func Replace() Option { return func(o *options) { o.replace = true } }

// Writer streams one artifact into a temp file of the sandbox. Nothing is
// visible under the final name until Commit succeeds. A Writer is not safe
// for concurrent use. It holds its own descriptors, so closing the Dir does
// not disturb it.
type Writer struct {
	name    string // as given, for Info and errors
	display string // full path, for errors
	base    string // last component of name
	tmp     string // temp file name in the parent directory
	parent  int    // parent directory descriptor (owned)
	f       *os.File
	h       hash.Hash
	n       int64
	limit   int64
	replace bool
	err     error // sticky: once set, the temp file is gone
}

// Create starts publishing name. At most limit bytes may be written; the
// Write that would cross it fails with ErrTooLarge and discards the
// artifact. Parent directories named in name are created (0700) as needed.
func (d *Dir) Create(name string, limit int64, opts ...Option) (*Writer, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	comps, err := splitName(name)
	if err != nil {
		return nil, err
	}
	display := d.path + "/" + name
	if limit < 0 {
		return nil, fmt.Errorf("artifacts: create %s: negative limit %d", display, limit)
	}
	fd, release, err := d.acquire("create " + name)
	if err != nil {
		return nil, err
	}
	defer release()

	var parent int
	if len(comps) == 1 {
		parent, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("artifacts: dup dir of %s: %w", display, err)
		}
	} else if parent, err = mkdirBeneath(fd, comps[:len(comps)-1], display); err != nil {
		return nil, err
	}
	base := comps[len(comps)-1]

	// Fail before the bytes are written when the name is already taken;
	// the rename at Commit still decides atomically.
	if !o.replace {
		var st unix.Stat_t
		err := unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			unix.Close(parent)
			return nil, fmt.Errorf("artifacts: create %s: %w", display, ErrExists)
		}
		if !errors.Is(err, unix.ENOENT) {
			unix.Close(parent)
			return nil, fmt.Errorf("artifacts: fstatat %s: %w", display, err)
		}
	}

	tmp, tfd, err := createTemp(parent, display)
	if err != nil {
		unix.Close(parent)
		return nil, err
	}
	return &Writer{
		name: name, display: display, base: base, tmp: tmp, parent: parent,
		f: os.NewFile(uintptr(tfd), tmp), h: sha256.New(), limit: limit, replace: o.replace,
	}, nil
}

// createTemp makes an exclusive 0600 temp file with an unguessable name, so
// that nobody can pre-plant a file or a symlink under it.
func createTemp(parent int, display string) (string, int, error) {
	var rnd [16]byte
	for range 8 {
		rand.Read(rnd[:])
		tmp := tmpPrefix + hex.EncodeToString(rnd[:])
		fd, err := retryEINTR(func() (int, error) {
			return unix.Openat(parent, tmp,
				unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		})
		if err == nil {
			return tmp, fd, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return "", -1, fmt.Errorf("artifacts: create temp file for %s: %w", display, err)
		}
	}
	return "", -1, fmt.Errorf("artifacts: create temp file for %s: names keep colliding: %w", display, unix.EEXIST)
}

// Write appends p to the artifact. A Write that would take the artifact past
// its limit writes nothing, discards the temp file and returns ErrTooLarge;
// so does every later call.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if int64(len(p)) > w.limit-w.n {
		w.fail(fmt.Errorf("artifacts: write %s: more than %d bytes: %w", w.display, w.limit, ErrTooLarge))
		return 0, w.err
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	w.h.Write(p[:n])
	if err != nil {
		w.fail(fmt.Errorf("artifacts: write %s: %w", w.display, err))
		return n, w.err
	}
	return n, nil
}

// ReadFrom copies r into the artifact, failing with ErrTooLarge as soon as r
// has more than the remaining limit, without reading r to its end.
func (w *Writer) ReadFrom(r io.Reader) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	buf := make([]byte, 64<<10)
	var total int64
	for {
		// One byte past the limit is enough to know it is crossed.
		b := buf
		if rem := w.limit - w.n; int64(len(b)) > rem {
			b = b[:rem+1]
		}
		n, rerr := r.Read(b)
		if n > 0 {
			m, err := w.Write(b[:n])
			total += int64(m)
			if err != nil {
				return total, err
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			w.fail(fmt.Errorf("artifacts: read source of %s: %w", w.display, rerr))
			return total, w.err
		}
	}
}

// Commit makes the artifact visible under its final name: fsync of the
// file, rename over the final name (refusing an existing one unless Replace
// was given), fsync of the directory. On failure nothing is published and
// the temp file is removed.
func (w *Writer) Commit() (Info, error) {
	if w.err != nil {
		return Info{}, w.err
	}
	if err := w.f.Sync(); err != nil {
		w.fail(fmt.Errorf("artifacts: fsync %s: %w", w.display, err))
		return Info{}, w.err
	}
	if err := w.f.Close(); err != nil {
		w.f = nil
		w.fail(fmt.Errorf("artifacts: close %s: %w", w.display, err))
		return Info{}, w.err
	}
	w.f = nil
	if err := w.rename(); err != nil {
		w.fail(err)
		return Info{}, w.err
	}
	if err := unix.Fsync(w.parent); err != nil {
		// The rename may be lost in a crash, so the artifact is not
		// published as promised: take it back rather than report a
		// failure while it stays visible.
		if !w.replace {
			unix.Unlinkat(w.parent, w.base, 0)
		}
		w.tmp = ""
		w.fail(fmt.Errorf("artifacts: fsync dir of %s: %w", w.display, err))
		return Info{}, w.err
	}
	info := Info{Name: w.name, Size: w.n, SHA256: hex.EncodeToString(w.h.Sum(nil))}
	w.tmp = ""
	w.finish(fmt.Errorf("artifacts: write %s: %w", w.display, ErrClosed))
	return info, nil
}

func (w *Writer) rename() error {
	if w.replace {
		if err := unix.Renameat(w.parent, w.tmp, w.parent, w.base); err != nil {
			return fmt.Errorf("artifacts: rename to %s: %w", w.display, err)
		}
		return nil
	}
	err := unix.Renameat2(w.parent, w.tmp, w.parent, w.base, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// The file system cannot rename without replacing; link(2) never
		// replaces either, and the temp name is dropped afterwards.
		if err = unix.Linkat(w.parent, w.tmp, w.parent, w.base, 0); err == nil {
			unix.Unlinkat(w.parent, w.tmp, 0)
			w.tmp = ""
		}
	}
	if errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("artifacts: publish %s: %w", w.display, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("artifacts: rename to %s: %w", w.display, err)
	}
	w.tmp = ""
	return nil
}

// Abort discards the artifact. It is a no-op after Commit or a failure.
func (w *Writer) Abort() {
	if w.err == nil {
		w.fail(fmt.Errorf("artifacts: write %s: aborted: %w", w.display, ErrClosed))
	}
}

// fail records err, removes the temp file and releases the descriptors.
func (w *Writer) fail(err error) {
	if w.err != nil {
		return
	}
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	if w.tmp != "" {
		unix.Unlinkat(w.parent, w.tmp, 0)
		w.tmp = ""
	}
	w.finish(err)
}

func (w *Writer) finish(err error) {
	w.err = err
	if w.parent >= 0 {
		unix.Close(w.parent)
		w.parent = -1
	}
}

// Publish writes everything r yields as the artifact name, at most limit
// bytes (ErrTooLarge beyond, with nothing published), and commits it.
func (d *Dir) Publish(name string, r io.Reader, limit int64, opts ...Option) (Info, error) {
	w, err := d.Create(name, limit, opts...)
	if err != nil {
		return Info{}, err
	}
	if _, err := w.ReadFrom(r); err != nil {
		w.Abort()
		return Info{}, err
	}
	return w.Commit()
}

// PublishCompressed publishes data zstd-compressed (see Compress). limit
// bounds the compressed size; it is checked before anything is written. Info
// describes the compressed file.
func (d *Dir) PublishCompressed(name string, data []byte, limit int64, opts ...Option) (Info, error) {
	c := Compress(nil, data)
	if int64(len(c)) > limit {
		return Info{}, fmt.Errorf("artifacts: publish %s/%s: compressed size %d exceeds limit %d: %w",
			d.path, name, len(c), limit, ErrTooLarge)
	}
	return d.Publish(name, bytes.NewReader(c), limit, opts...)
}
