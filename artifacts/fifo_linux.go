package artifacts

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// makeFIFO makes the FIFO name (one component) in d for a stream or a
// feed (what, for errors), mode 0600 and owned by the owner of d (the
// process on the other end, whose directory it is), and opens it with
// flags. The entry must not exist. The descriptor is checked to be a
// FIFO: the directory is the other process's, which may swap the entry
// between the mknod and the open. It returns the descriptor and the
// FIFO's name for messages.
func (d *Dir) makeFIFO(what, name string, flags int) (int, string, error) {
	if !ValidName(name) || strings.Contains(name, "/") {
		return -1, "", fmt.Errorf("artifacts: make %s %q in %s: %w", what, name, d.path, ErrUnsafePath)
	}
	display := d.path + "/" + name
	fd, release, err := d.acquire("make " + what + " " + name)
	if err != nil {
		return -1, "", err
	}
	defer release()
	var dst unix.Stat_t
	if err := unix.Fstat(fd, &dst); err != nil {
		return -1, "", fmt.Errorf("artifacts: fstat %s: %w", d.path, err)
	}
	if err := unix.Mknodat(fd, name, unix.S_IFIFO|0o600, 0); err != nil {
		return -1, "", openErr("mkfifo", display, err)
	}
	ffd, err := retryEINTR(func() (int, error) { return unix.Openat(fd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0) })
	if err != nil {
		unix.Unlinkat(fd, name, 0)
		return -1, "", openErr("open "+what, display, err)
	}
	fail := func(err error) (int, string, error) {
		unix.Close(ffd)
		return -1, "", err
	}
	var st unix.Stat_t
	if err := unix.Fstat(ffd, &st); err != nil {
		return fail(fmt.Errorf("artifacts: fstat %s: %w", display, err))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return fail(fmt.Errorf("artifacts: open %s %s: %w", what, display, ErrNotRegular))
	}
	if err := unix.Fchownat(ffd, "", int(dst.Uid), int(dst.Gid), unix.AT_EMPTY_PATH); err != nil {
		return fail(fmt.Errorf("artifacts: fchown %s: %w", display, err))
	}
	return ffd, display, nil
}
