package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// WorkFS is a worker's /work: a tmpfs of a fixed size made by the
// supervisor as a detached mount (fsopen/fsmount: it appears in no mount
// table on the host and goes away with the last descriptor and the last
// process that has it attached), nosuid, nodev and noexec, its root owned
// by the worker's identity. The init attaches it at /work (gate wire
// record 17). Whatever the worker writes is bounded by the size and the
// inode count, is charged to the worker's memory cgroup, and never reaches
// the host's disk; the supervisor reaches it through Dir (a prove's
// certificate leaves it through a FIFO the supervisor makes there, and is
// written to disk by the supervisor).
type WorkFS struct {
	mu     sync.Mutex
	f      *os.File // the detached mount; nil once closed
	bytes  int64
	inodes uint64
}

// ErrWorkFSClosed: a WorkFS used after Close.
var ErrWorkFSClosed = errors.New("sandbox: work file system closed")

// NewWorkFS makes a tmpfs of bytes (rounded up to pages by the kernel)
// and inodes, whose root (mode 0700) belongs to owner.
func NewWorkFS(bytes int64, inodes uint64, owner Identity) (*WorkFS, error) {
	if bytes <= 0 || inodes == 0 {
		// tmpfs reads 0 as "no limit": never let it.
		return nil, fmt.Errorf("%w: work file system of %d bytes, %d inodes", ErrInvalidConfig, bytes, inodes)
	}
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("sandbox: fsopen tmpfs: %w", err)
	}
	defer unix.Close(fsfd)
	for _, o := range [][2]string{
		{"size", strconv.FormatInt(bytes, 10)},
		{"nr_inodes", strconv.FormatUint(inodes, 10)},
		{"mode", "0700"},
		{"uid", strconv.FormatUint(uint64(owner.UID), 10)},
		{"gid", strconv.FormatUint(uint64(owner.GID), 10)},
	} {
		if err := unix.FsconfigSetString(fsfd, o[0], o[1]); err != nil {
			return nil, fmt.Errorf("sandbox: tmpfs option %s=%s: %w", o[0], o[1], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return nil, fmt.Errorf("sandbox: create tmpfs: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, fmt.Errorf("sandbox: fsmount tmpfs: %w", err)
	}
	return &WorkFS{f: os.NewFile(uintptr(mfd), "workfs"), bytes: bytes, inodes: inodes}, nil
}

// Bytes is the current size bound.
func (w *WorkFS) Bytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bytes
}

// Resize sets a new size bound (a warm worker's tmpfs gets its attempt's
// bound when it is bound to the attempt). The kernel refuses a size below
// what is in use.
func (w *WorkFS) Resize(bytes int64) error {
	if bytes <= 0 {
		return fmt.Errorf("%w: work file system of %d bytes", ErrInvalidConfig, bytes)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return ErrWorkFSClosed
	}
	fd, err := unix.Fspick(int(w.f.Fd()), "", unix.FSPICK_EMPTY_PATH|unix.FSPICK_CLOEXEC)
	if err != nil {
		return fmt.Errorf("sandbox: fspick work tmpfs: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.FsconfigSetString(fd, "size", strconv.FormatInt(bytes, 10)); err != nil {
		return fmt.Errorf("sandbox: resize work tmpfs to %d bytes: %w", bytes, err)
	}
	if err := unix.FsconfigReconfigure(fd); err != nil {
		return fmt.Errorf("sandbox: resize work tmpfs to %d bytes: %w", bytes, err)
	}
	w.bytes = bytes
	return nil
}

// Usage is what the file system holds, from statfs.
type Usage struct {
	UsedBytes, SizeBytes int64
	FreeInodes           uint64
}

// Full reports whether the worker reached a bound: no block or no inode
// left. A worker that fills its work dir gets ENOSPC, and its attempt is
// judged by this, whatever it reports.
func (u Usage) Full() bool { return u.UsedBytes >= u.SizeBytes || u.FreeInodes == 0 }

// Usage reads the file system's counters.
func (w *WorkFS) Usage() (Usage, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return Usage{}, ErrWorkFSClosed
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(w.f.Fd()), &st); err != nil {
		return Usage{}, fmt.Errorf("sandbox: statfs work tmpfs: %w", err)
	}
	bs := int64(st.Bsize)
	return Usage{UsedBytes: int64(st.Blocks-st.Bfree) * bs, SizeBytes: int64(st.Blocks) * bs, FreeInodes: st.Ffree}, nil
}

// OpenRoot returns a new descriptor of the file system's root directory
// (O_DIRECTORY, close-on-exec), for reading what the worker wrote.
func (w *WorkFS) OpenRoot() (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return -1, ErrWorkFSClosed
	}
	fd, err := unix.Openat(int(w.f.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("sandbox: open work tmpfs root: %w", err)
	}
	return fd, nil
}

// file is the mount descriptor handed to the init.
func (w *WorkFS) file() (*os.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil, ErrWorkFSClosed
	}
	return w.f, nil
}

// Close drops the supervisor's hold. The memory is freed once no process
// has the file system attached or open any more.
func (w *WorkFS) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
