package artifacts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Root is the directory under which all sandboxes live:
// <root>/<job id>/<attempt>. Its path is trusted (it comes from the
// supervisor's configuration); everything below it is not.
type Root struct {
	f    *os.File
	path string
	dev  uint64
}

// OpenRoot opens the sandbox root at path, creating it (and missing parents)
// with mode 0700. The last component must not be a symlink.
func OpenRoot(path string) (*Root, error) {
	path = filepath.Clean(path)
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("artifacts: create root %s: %w", path, err)
	}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	err = symlinkAsELOOP(unix.AT_FDCWD, path, err)
	if err != nil {
		return nil, openErr("open root", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("artifacts: fstat root %s: %w", path, err)
	}
	return &Root{f: os.NewFile(uintptr(fd), path), path: path, dev: st.Dev}, nil
}

// Path returns the root's path as given to OpenRoot (cleaned).
func (r *Root) Path() string { return r.path }

// Close releases the root's descriptor. Dirs opened from it stay usable for
// reads and writes, but Dir.Remove can no longer delete an empty job
// directory.
func (r *Root) Close() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("artifacts: close root %s: %w", r.path, err)
	}
	return nil
}

func (r *Root) fd() int { return int(r.f.Fd()) }

// Create makes the sandbox directory of one attempt, <root>/<job>/<attempt>,
// with mode 0700, and returns it open. An existing directory for the same
// attempt is an error (ErrExists): a new attempt never sees what an earlier
// one left.
func (r *Root) Create(jobID string, attempt uint32) (*Dir, error) {
	defer runtime.KeepAlive(r.f)
	if !ValidName(jobID) {
		return nil, fmt.Errorf("artifacts: create sandbox: invalid job id %q: %w", jobID, ErrUnsafePath)
	}
	an := attemptName(attempt)
	display := filepath.Join(r.path, jobID, an)
	// The job directory is shared by attempts and may be removed by a
	// concurrent Dir.Remove of the last one between our mkdir and open;
	// a few rounds settle that race.
	var lastErr error
	for range 4 {
		jobCreated := false
		err := ignoringEINTR(func() error { return unix.Mkdirat(r.fd(), jobID, 0o700) })
		switch {
		case err == nil:
			jobCreated = true
		case errors.Is(err, unix.EEXIST):
		default:
			return nil, openErr("mkdirat", filepath.Join(r.path, jobID), err)
		}
		jobFd, err := openDir(r.fd(), jobID)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				lastErr = err
				continue
			}
			if errors.Is(err, unix.ENOTDIR) {
				// A non-directory holds the job's name.
				err = unix.EEXIST
			}
			return nil, openErr("open job dir", filepath.Join(r.path, jobID), err)
		}
		err = ignoringEINTR(func() error { return unix.Mkdirat(jobFd, an, 0o700) })
		if err != nil {
			unix.Close(jobFd)
			if errors.Is(err, unix.ENOENT) {
				lastErr = err
				continue
			}
			return nil, openErr("mkdirat", display, err)
		}
		fd, err := openDir(jobFd, an)
		if err != nil {
			unix.Close(jobFd)
			return nil, openErr("open sandbox", display, err)
		}
		// Durable entries, so that a published artifact's directory
		// exists after a crash whenever the artifact does.
		err = unix.Fsync(jobFd)
		if err == nil && jobCreated {
			err = unix.Fsync(r.fd())
		}
		if err != nil {
			unix.Close(fd)
			unix.Close(jobFd)
			return nil, fmt.Errorf("artifacts: fsync parents of %s: %w", display, err)
		}
		return newDir(r, jobID, attempt, jobFd, fd, display), nil
	}
	return nil, fmt.Errorf("artifacts: create sandbox %s: job directory kept vanishing: %w", display, lastErr)
}

// Open opens the existing sandbox of an attempt. A symlink in place of the
// job or attempt directory is refused (ErrUnsafePath).
func (r *Root) Open(jobID string, attempt uint32) (*Dir, error) {
	defer runtime.KeepAlive(r.f)
	if !ValidName(jobID) {
		return nil, fmt.Errorf("artifacts: open sandbox: invalid job id %q: %w", jobID, ErrUnsafePath)
	}
	an := attemptName(attempt)
	display := filepath.Join(r.path, jobID, an)
	jobFd, err := openDir(r.fd(), jobID)
	if err != nil {
		return nil, openErr("open job dir", filepath.Join(r.path, jobID), err)
	}
	fd, err := openDir(jobFd, an)
	if err != nil {
		unix.Close(jobFd)
		return nil, openErr("open sandbox", display, err)
	}
	return newDir(r, jobID, attempt, jobFd, fd, display), nil
}

// RemoveAll deletes every sandbox below the root for which keep returns
// false (keep may be nil: delete all), and job directories left empty. It is
// meant for supervisor start, when no worker of an earlier boot runs any
// more. Entries of the root that are not valid job ids are not ours and are
// left alone; entries of a job directory that are not canonical attempt
// numbers are deleted. It goes on after a failure and returns all errors.
// It is Scan then Prune.
func (r *Root) RemoveAll(keep func(jobID string, attempt uint32) bool) error {
	inv, err := r.Scan()
	if err != nil {
		return err
	}
	return r.Prune(inv, keep)
}

// removeJob deletes job's sandboxes that keep does not keep (nil: all)
// and its directory when nothing is kept (RemoveJob).
func (r *Root) removeJob(job string, keep func(string, uint32) bool) error {
	jobPath := filepath.Join(r.path, job)
	var st unix.Stat_t
	if err := unix.Fstatat(r.fd(), job, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("artifacts: fstatat %s: %w", jobPath, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		// Something else in a job's place (never made by us): drop the
		// entry itself, never what a symlink points at.
		return removeTree(r.fd(), job, r.dev, jobPath)
	}
	jobFd, err := openDir(r.fd(), job)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return openErr("open job dir", jobPath, err)
	}
	defer unix.Close(jobFd)
	attempts, err := allNames(jobFd, jobPath)
	if err != nil {
		return err
	}
	var errs []error
	kept := 0
	for _, an := range attempts {
		if a, ok := parseAttempt(an); ok && keep != nil && keep(job, a) {
			kept++
			continue
		}
		if err := removeTree(jobFd, an, r.dev, filepath.Join(jobPath, an)); err != nil {
			errs = append(errs, err)
		}
	}
	if kept == 0 && len(errs) == 0 {
		if err := rmdirIfEmpty(r.fd(), job); err != nil {
			errs = append(errs, fmt.Errorf("artifacts: rmdir %s: %w", jobPath, err))
		}
	}
	return errors.Join(errs...)
}

// allNames lists a directory the supervisor itself populates (the root or
// a job directory), so the list is bounded by what we created.
func allNames(dirfd int, display string) ([]string, error) {
	return readNames(dirfd, -1, display)
}

// rmdirIfEmpty removes an empty directory; a concurrent Create that
// already put an attempt in it wins.
func rmdirIfEmpty(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
	if err == nil || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// openDir opens a directory below dirfd without following a symlink.
func openDir(dirfd int, name string) (int, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	return fd, symlinkAsELOOP(dirfd, name, err)
}

// symlinkAsELOOP turns the ENOTDIR that O_DIRECTORY|O_NOFOLLOW gives for a
// symlink into the ELOOP that O_NOFOLLOW alone gives, so that a planted
// symlink is reported as unsafe rather than as missing.
func symlinkAsELOOP(dirfd int, name string, err error) error {
	if !errors.Is(err, unix.ENOTDIR) {
		return err
	}
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return unix.ELOOP
	}
	return err
}

// Dir is one attempt's sandbox directory, held open. All operations are
// relative to its descriptor and safe for concurrent use; Close and Remove
// wait for operations in progress and make later ones fail with ErrClosed.
type Dir struct {
	root    *Root // nil for OpenDir
	job     string
	attempt uint32
	path    string
	dev     uint64

	mu     sync.RWMutex // write-held only to close the files
	jobDir *os.File     // nil for OpenDir
	f      *os.File
}

// OpenDir opens an existing directory at path as a sandbox, for a process
// that sees its sandbox at a fixed path rather than below a Root: a worker
// in a jail, where the attempt directory is bind-mounted. path is trusted up
// to its last component, which must be a directory and not a symlink. Its
// Remove empties the directory but leaves it: the path belongs to whoever
// made it (often a mount point).
func OpenDir(path string) (*Dir, error) {
	path = filepath.Clean(path)
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err = symlinkAsELOOP(unix.AT_FDCWD, path, err); err != nil {
		return nil, openErr("open sandbox", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("artifacts: fstat sandbox %s: %w", path, err)
	}
	return &Dir{path: path, dev: st.Dev, f: os.NewFile(uintptr(fd), path)}, nil
}

func newDir(r *Root, job string, attempt uint32, jobFd, fd int, path string) *Dir {
	var st unix.Stat_t
	dev := r.dev
	if unix.Fstat(fd, &st) == nil {
		dev = st.Dev
	}
	return &Dir{
		root: r, job: job, attempt: attempt, path: path, dev: dev,
		jobDir: os.NewFile(uintptr(jobFd), filepath.Dir(path)),
		f:      os.NewFile(uintptr(fd), path),
	}
}

// Path returns <root>/<job>/<attempt>, for bind-mounting into a jail or for
// messages. Operations of this package never resolve it again.
func (d *Dir) Path() string { return d.path }

// acquire returns the directory descriptor and holds it open until release
// is called, or fails with ErrClosed.
func (d *Dir) acquire(op string) (fd int, release func(), err error) {
	d.mu.RLock()
	if d.f == nil {
		d.mu.RUnlock()
		return -1, nil, fmt.Errorf("artifacts: %s in %s: %w", op, d.path, ErrClosed)
	}
	return int(d.f.Fd()), d.mu.RUnlock, nil
}

// Chown hands the directory to the uid and gid a worker runs as, through the
// held descriptor.
func (d *Dir) Chown(uid, gid int) error {
	fd, release, err := d.acquire("chown")
	if err != nil {
		return err
	}
	defer release()
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return fmt.Errorf("artifacts: fchown %s: %w", d.path, err)
	}
	return nil
}

// Close releases the directory's descriptors; the directory stays on disk.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return fmt.Errorf("artifacts: close sandbox %s: %w", d.path, ErrClosed)
	}
	err := d.f.Close()
	if d.jobDir != nil {
		err = errors.Join(err, d.jobDir.Close())
	}
	d.f, d.jobDir = nil, nil
	if err != nil {
		return fmt.Errorf("artifacts: close sandbox %s: %w", d.path, err)
	}
	return nil
}

// Remove deletes the sandbox with everything in it, then the job directory
// if no other attempt is left in it, and closes the Dir. The contents are
// deleted through the held descriptor; symlinks are deleted, never followed,
// and no mount point below the sandbox is descended into.
func (d *Dir) Remove() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return fmt.Errorf("artifacts: remove sandbox %s: %w", d.path, ErrClosed)
	}
	defer func() {
		d.f.Close()
		if d.jobDir != nil {
			d.jobDir.Close()
		}
		d.f, d.jobDir = nil, nil
	}()
	if err := removeContents(int(d.f.Fd()), d.dev, d.path); err != nil {
		return err
	}
	if d.root == nil {
		return nil
	}
	if err := unix.Unlinkat(int(d.jobDir.Fd()), attemptName(d.attempt), unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("artifacts: rmdir %s: %w", d.path, err)
	}
	defer runtime.KeepAlive(d.root.f)
	rootFd := d.root.fd()
	if rootFd < 0 {
		// The Root was closed; RemoveAll at the next start takes the
		// empty job directory.
		return nil
	}
	if err := rmdirIfEmpty(rootFd, d.job); err != nil {
		return fmt.Errorf("artifacts: rmdir %s: %w", filepath.Dir(d.path), err)
	}
	return nil
}
