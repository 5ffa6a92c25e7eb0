package worker

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
)

// workDir is an attempt's work directory, held open by descriptor from the
// moment the run starts, so that swapping a path component afterwards
// cannot redirect the publication.
//
// TODO(artifacts): the artifacts package opens sandboxes only as
// <root>/<job>/<attempt> (Root.Open), while a jailed worker sees its
// sandbox at a fixed mount point ("/work"). Until artifacts offers opening
// a Dir from a path, publication below follows artifacts' protocol itself
// (exclusive unguessable temp file, bounded write, fsync, no-replace
// rename, directory fsync); compression and its framing come from
// artifacts.Compress. Swap this file for artifacts.Dir once it can.
type workDir struct {
	f    *os.File
	path string
}

// openWorkDir opens path, which must be an existing directory and not a
// symlink.
func openWorkDir(path string) (*workDir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	for errors.Is(err, unix.EINTR) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrWorkDir, path, workDirCause(path, err))
	}
	return &workDir{f: os.NewFile(uintptr(fd), path), path: path}, nil
}

func workDirCause(path string, err error) string {
	// O_DIRECTORY|O_NOFOLLOW reports a symlink as ENOTDIR; say which.
	if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		return "is a symlink"
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return "does not exist"
	case errors.Is(err, unix.ENOTDIR):
		return "not a directory"
	case errors.Is(err, unix.ELOOP):
		return "is a symlink"
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return "cannot open"
}

func (d *workDir) Close() error { return d.f.Close() }

func (d *workDir) fd() int { return int(d.f.Fd()) }

// publishCompressed publishes data zstd-compressed as name, atomically: a
// reader sees nothing or the whole file under name. The compressed size is
// checked against limit before a byte is written (artifacts.ErrTooLarge),
// and an existing name is never replaced (artifacts.ErrExists). On any
// failure nothing is left behind, temp file included.
func (d *workDir) publishCompressed(name string, data []byte, limit uint64) (artifacts.Info, error) {
	if !artifacts.ValidName(name) {
		return artifacts.Info{}, fmt.Errorf("publish %q: %w", name, artifacts.ErrUnsafePath)
	}
	c := artifacts.Compress(nil, data)
	if uint64(len(c)) > limit {
		return artifacts.Info{}, fmt.Errorf("publish %s: compressed certificate is %d bytes, the job allows %d: %w",
			name, len(c), limit, artifacts.ErrTooLarge)
	}
	tmp, f, err := d.createTemp()
	if err != nil {
		return artifacts.Info{}, fmt.Errorf("publish %s: %w", name, err)
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			unix.Unlinkat(d.fd(), tmp, 0)
		}
	}()
	if err := writeBounded(f, c, limit); err != nil {
		return artifacts.Info{}, fmt.Errorf("publish %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return artifacts.Info{}, fmt.Errorf("publish %s: fsync: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return artifacts.Info{}, fmt.Errorf("publish %s: close: %w", name, err)
	}
	if err := d.renameNoReplace(tmp, name); err != nil {
		return artifacts.Info{}, fmt.Errorf("publish %s: %w", name, err)
	}
	committed = true
	if err := unix.Fsync(d.fd()); err != nil {
		// The rename may not survive a crash: take the file back rather
		// than report a failure while it stays visible.
		unix.Unlinkat(d.fd(), name, 0)
		return artifacts.Info{}, fmt.Errorf("publish %s: fsync directory: %w", name, err)
	}
	sum := sha256.Sum256(c)
	return artifacts.Info{Name: name, Size: int64(len(c)), SHA256: hex.EncodeToString(sum[:])}, nil
}

// tmpPrefix matches the artifacts package's hidden temp names, which
// artifact names (no leading dot) can never take.
const tmpPrefix = ".tmp-"

func (d *workDir) createTemp() (string, *os.File, error) {
	var rnd [16]byte
	for range 8 {
		_, _ = rand.Read(rnd[:])
		tmp := tmpPrefix + hex.EncodeToString(rnd[:])
		fd, err := unix.Openat(d.fd(), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			return tmp, os.NewFile(uintptr(fd), tmp), nil
		}
		if !errors.Is(err, unix.EEXIST) && !errors.Is(err, unix.EINTR) {
			return "", nil, fmt.Errorf("create temp file: %w", err)
		}
	}
	return "", nil, fmt.Errorf("create temp file: names keep colliding: %w", unix.EEXIST)
}

// writeBounded writes b, refusing to go past limit even if the caller's
// check was wrong.
func writeBounded(f *os.File, b []byte, limit uint64) error {
	if uint64(len(b)) > limit {
		return artifacts.ErrTooLarge
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func (d *workDir) renameNoReplace(tmp, name string) error {
	err := unix.Renameat2(d.fd(), tmp, d.fd(), name, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// No RENAME_NOREPLACE on this file system: link(2) never replaces
		// either; the temp name is dropped afterwards.
		if err = unix.Linkat(d.fd(), tmp, d.fd(), name, 0); err == nil {
			unix.Unlinkat(d.fd(), tmp, 0)
		}
	}
	if errors.Is(err, unix.EEXIST) {
		return artifacts.ErrExists
	}
	if err != nil {
		return fmt.Errorf("rename: %w", err)
	}
	return nil
}
