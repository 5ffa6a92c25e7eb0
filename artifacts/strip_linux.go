package artifacts

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenDirFD makes a Dir of an open directory descriptor, which it takes
// over: the root of a file system that is reachable by no path on the host
// (a worker's tmpfs, a detached mount). display names it in messages. Its
// Remove empties the directory.
func OpenDirFD(fd int, display string) (*Dir, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("artifacts: fstat sandbox %s: %w", display, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return nil, fmt.Errorf("artifacts: sandbox %s: not a directory: %w", display, ErrNotRegular)
	}
	return &Dir{path: display, dev: st.Dev, f: os.NewFile(uintptr(fd), display)}, nil
}

// Stripped counts what Strip removed or changed.
type Stripped struct {
	Removed  int // entries that were neither a regular file nor a directory, or hard-linked
	Modes    int // modes reset to 0600 / 0700 (setuid, setgid, sticky, group or other bits)
	Owners   int // entries handed back to the caller's uid and gid
	Xattrs   int // extended attributes removed
	Problems []error
}

// Strip makes a sandbox that a worker wrote into one the supervisor can
// keep: below the directory it leaves only regular files with one link
// (mode 0600) and directories (mode 0700), owned by the calling process,
// without extended attributes. Symlinks, FIFOs, sockets, devices and hard
// links go; nothing is followed, and no mount point is descended into.
// It is meant for a directory no process still writes to.
func (d *Dir) Strip() (Stripped, error) {
	fd, release, err := d.acquire("strip")
	if err != nil {
		return Stripped{}, err
	}
	defer release()
	var s Stripped
	s.normalize(fd, true, d.path)
	stripTree(fd, d.dev, d.path, &s)
	return s, errors.Join(s.Problems...)
}

func stripTree(dirfd int, dev uint64, display string, s *Stripped) {
	names, err := allNames(dirfd, display)
	if err != nil {
		s.Problems = append(s.Problems, err)
		return
	}
	for _, n := range names {
		p := display + "/" + n
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			s.Problems = append(s.Problems, fmt.Errorf("artifacts: fstatat %s: %w", p, err))
			continue
		}
		switch typ := st.Mode & unix.S_IFMT; {
		case typ == unix.S_IFDIR && st.Dev == dev:
			fd, err := retryEINTR(func() (int, error) {
				return unix.Openat(dirfd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			})
			if err != nil {
				s.Problems = append(s.Problems, openErr("openat", p, err))
				continue
			}
			s.normalize(fd, true, p)
			stripTree(fd, dev, p, s)
			unix.Close(fd)
		case typ == unix.S_IFREG && st.Nlink == 1:
			// O_NONBLOCK|O_NOFOLLOW: the entry was a regular file a moment
			// ago; whatever it is now, the open neither blocks nor follows.
			fd, err := retryEINTR(func() (int, error) {
				return unix.Openat(dirfd, n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
			})
			if err != nil {
				s.Problems = append(s.Problems, openErr("openat", p, err))
				continue
			}
			s.normalize(fd, false, p)
			unix.Close(fd)
		default:
			// A symlink, FIFO, socket, device, a second name of a file, or
			// a mount point: none of it is an artifact.
			if err := removeTree(dirfd, n, dev, p); err != nil {
				s.Problems = append(s.Problems, err)
				continue
			}
			s.Removed++
		}
	}
}

// normalize gives the open entry fd our ownership, mode 0700 (dir) or
// 0600 (file) and no extended attributes.
func (s *Stripped) normalize(fd int, dir bool, display string) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		s.Problems = append(s.Problems, fmt.Errorf("artifacts: fstat %s: %w", display, err))
		return
	}
	if int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid() {
		if err := unix.Fchown(fd, os.Geteuid(), os.Getegid()); err != nil {
			s.Problems = append(s.Problems, fmt.Errorf("artifacts: fchown %s: %w", display, err))
		} else {
			s.Owners++
		}
	}
	want := uint32(0o600)
	if dir {
		want = 0o700
	}
	// After the chown: a chown clears setuid and setgid itself, but the
	// mode is reset either way.
	if st.Mode&0o7777 != want {
		if err := unix.Fchmod(fd, want); err != nil {
			s.Problems = append(s.Problems, fmt.Errorf("artifacts: fchmod %s: %w", display, err))
		} else {
			s.Modes++
		}
	}
	s.Xattrs += removeXattrs(fd, display, &s.Problems)
}

func removeXattrs(fd int, display string, problems *[]error) int {
	buf := make([]byte, 4096)
	n, err := unix.Flistxattr(fd, buf)
	if errors.Is(err, unix.ERANGE) {
		if size, err2 := unix.Flistxattr(fd, nil); err2 == nil {
			buf = make([]byte, size)
			n, err = unix.Flistxattr(fd, buf)
		}
	}
	if err != nil {
		if !errors.Is(err, unix.ENOTSUP) {
			*problems = append(*problems, fmt.Errorf("artifacts: flistxattr %s: %w", display, err))
		}
		return 0
	}
	removed := 0
	for _, name := range splitNUL(buf[:n]) {
		if err := unix.Fremovexattr(fd, name); err != nil && !errors.Is(err, unix.ENODATA) {
			*problems = append(*problems, fmt.Errorf("artifacts: fremovexattr %s %s: %w", display, name, err))
			continue
		}
		removed++
	}
	return removed
}

func splitNUL(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != 0 {
			i++
		}
		if i > 0 {
			out = append(out, string(b[:i]))
		}
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}
