package artifacts

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

var (
	// openat2 is replaced in tests to play a kernel without openat2(2).
	openat2 = unix.Openat2

	// openat2Missing latches once openat2 reported ENOSYS; the syscall does
	// not come back during the life of a process.
	openat2Missing atomic.Bool
)

// resolveFlags keep a lookup beneath the directory: no "..", absolute or
// symlink escape, no symlink at all, no /proc magic link, and no crossing
// into another mount, which a plain walk could not detect either.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS |
	unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// openBeneath opens the already validated components below dirfd with flags
// (O_NOFOLLOW and O_CLOEXEC are always added). display names the path in
// errors.
func openBeneath(dirfd int, comps []string, flags int, display string) (int, error) {
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !openat2Missing.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: resolveFlags}
		fd, err := retryEINTR(func() (int, error) { return openat2(dirfd, joinComps(comps), &how) })
		if err == nil {
			return fd, nil
		}
		if !errors.Is(err, unix.ENOSYS) {
			return -1, openErr("openat2", display, err)
		}
		openat2Missing.Store(true)
	}
	return walkBeneath(dirfd, comps, flags, display)
}

// walkBeneath is the fallback for kernels without openat2: one openat per
// component. Components are validated (no "..", no "/"), so only a symlink
// or a mount point could lead elsewhere; O_PATH|O_NOFOLLOW opens a symlink
// itself, which fstat then refuses, and a device change is refused like
// RESOLVE_NO_XDEV does.
func walkBeneath(dirfd int, comps []string, flags int, display string) (int, error) {
	// Callers validate names; this walk is only as safe as that, so it
	// checks again rather than trust every future caller.
	for _, c := range comps {
		if c == "" || c == "." || c == ".." || strings.ContainsRune(c, '/') {
			return -1, fmt.Errorf("artifacts: open %s: component %q: %w", display, c, ErrUnsafePath)
		}
	}
	var base unix.Stat_t
	if err := unix.Fstat(dirfd, &base); err != nil {
		return -1, fmt.Errorf("artifacts: fstat dir of %s: %w", display, err)
	}
	cur := dirfd
	defer func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}()
	for _, c := range comps[:len(comps)-1] {
		next, err := openDirStep(cur, c, base.Dev, display, ErrNotFound)
		if err != nil {
			return -1, err
		}
		if cur != dirfd {
			unix.Close(cur)
		}
		cur = next
	}
	last := comps[len(comps)-1]
	fd, err := retryEINTR(func() (int, error) { return unix.Openat(cur, last, flags, 0) })
	if err != nil {
		return -1, openErr("openat", display, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("artifacts: fstat %s: %w", display, err)
	}
	if st.Dev != base.Dev {
		unix.Close(fd)
		return -1, fmt.Errorf("artifacts: open %s: crosses a mount point: %w", display, ErrUnsafePath)
	}
	return fd, nil
}

// openDirStep opens one intermediate directory component below cur as an
// O_PATH descriptor, refusing symlinks, mount crossings and non-directories
// (with notDir: missing for a read, taken for a publication).
func openDirStep(cur int, c string, dev uint64, display string, notDir error) (int, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(cur, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, openErr("openat", display, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("artifacts: fstat component %q of %s: %w", c, display, err)
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		unix.Close(fd)
		return -1, fmt.Errorf("artifacts: open %s: component %q is a symlink: %w", display, c, ErrUnsafePath)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		unix.Close(fd)
		return -1, fmt.Errorf("artifacts: open %s: component %q is not a directory: %w", display, c, notDir)
	case st.Dev != dev:
		unix.Close(fd)
		return -1, fmt.Errorf("artifacts: open %s: component %q crosses a mount point: %w", display, c, ErrUnsafePath)
	}
	return fd, nil
}

// openErr wraps an errno from an open with the sentinel a caller matches.
func openErr(op, display string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		// ELOOP: a symlink met with O_NOFOLLOW or RESOLVE_NO_SYMLINKS.
		// EXDEV: RESOLVE_BENEATH or RESOLVE_NO_XDEV refused an escape.
		return fmt.Errorf("artifacts: %s %s: %w: %w", op, display, ErrUnsafePath, err)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("artifacts: %s %s: %w: %w", op, display, ErrNotFound, err)
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("artifacts: %s %s: %w: %w", op, display, ErrExists, err)
	case errors.Is(err, unix.ENXIO):
		// open(2) of a socket, or of a device without a driver.
		return fmt.Errorf("artifacts: %s %s: %w: %w", op, display, ErrNotRegular, err)
	}
	return fmt.Errorf("artifacts: %s %s: %w", op, display, err)
}

func joinComps(comps []string) string {
	n := len(comps) - 1
	for _, c := range comps {
		n += len(c)
	}
	b := make([]byte, 0, n)
	for i, c := range comps {
		if i > 0 {
			b = append(b, '/')
		}
		b = append(b, c...)
	}
	return string(b)
}

// retryEINTR repeats an open interrupted by a signal; Go's runtime sends
// SIGURG for preemption, and opens of some files are interruptible.
func retryEINTR(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

func ignoringEINTR(f func() error) error {
	for {
		err := f()
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// mkdirBeneath makes sure the directories comps exist below dirfd (creating
// them 0700 where missing, never following a symlink) and returns an fd of
// the last one, opened O_RDONLY|O_DIRECTORY so it can be fsynced.
func mkdirBeneath(dirfd int, comps []string, display string) (int, error) {
	var base unix.Stat_t
	if err := unix.Fstat(dirfd, &base); err != nil {
		return -1, fmt.Errorf("artifacts: fstat dir of %s: %w", display, err)
	}
	cur := dirfd
	for _, c := range comps {
		created := false
		err := ignoringEINTR(func() error { return unix.Mkdirat(cur, c, 0o700) })
		switch {
		case err == nil:
			created = true
		case errors.Is(err, unix.EEXIST):
		default:
			closeUnless(cur, dirfd)
			return -1, openErr("mkdirat", display, err)
		}
		if created {
			// The new entry must survive a crash together with the
			// artifact that will be published below it.
			if err := unix.Fsync(cur); err != nil {
				closeUnless(cur, dirfd)
				return -1, fmt.Errorf("artifacts: fsync parent of %s: %w", display, err)
			}
		}
		step, err := openDirStep(cur, c, base.Dev, display, ErrExists)
		if err != nil {
			closeUnless(cur, dirfd)
			return -1, err
		}
		// O_PATH cannot be fsynced; reopen "." through it.
		next, err := retryEINTR(func() (int, error) {
			return unix.Openat(step, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		})
		unix.Close(step)
		closeUnless(cur, dirfd)
		if err != nil {
			return -1, openErr("openat", display, err)
		}
		cur = next
	}
	return cur, nil
}

func closeUnless(fd, keep int) {
	if fd != keep {
		unix.Close(fd)
	}
}

// removeTree deletes name below dirfd and, if it is a directory, everything
// in it, through descriptors only and without following symlinks. dev is
// the device of the sandbox root: a directory on another device (a mount) is
// not descended into.
func removeTree(dirfd int, name string, dev uint64, display string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("artifacts: fstatat %s: %w", display, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := unix.Unlinkat(dirfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("artifacts: unlinkat %s: %w", display, err)
		}
		return nil
	}
	if st.Dev != dev {
		return fmt.Errorf("artifacts: remove %s: crosses a mount point: %w", display, ErrUnsafePath)
	}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return openErr("openat", display, err)
	}
	err = removeContents(fd, dev, display)
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("artifacts: rmdir %s: %w", display, err)
	}
	return nil
}

// removeContents empties the directory dirfd. Names are read in batches so
// that a directory with millions of entries does not need them all in
// memory; the directory is reopened for each batch because deleting while
// reading getdents can skip entries.
func removeContents(dirfd int, dev uint64, display string) error {
	const batch = 1024
	for {
		names, err := readNames(dirfd, batch, display)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			return nil
		}
		var errs []error
		for _, n := range names {
			if err := removeTree(dirfd, n, dev, display+"/"+n); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == len(names) || (len(errs) > 0 && len(names) < batch) {
			// Nothing in this batch could go (or the last, short batch
			// left something): another pass would meet the same names.
			return errors.Join(errs...)
		}
	}
}

// readNames returns up to n entry names of dirfd through a fresh open file
// description, so the offset of dirfd itself is never moved.
func readNames(dirfd, n int, display string) ([]string, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, fmt.Errorf("artifacts: open %s: %w", display, err)
	}
	f := os.NewFile(uintptr(fd), display)
	defer f.Close()
	names, err := f.Readdirnames(n)
	if err != nil && len(names) == 0 && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("artifacts: read dir %s: %w", display, err)
	}
	return names, nil
}
