package artifacts

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A stream carries an artifact's bytes from a process that cannot reach
// the directory the artifact is kept in (a jailed worker, whose only
// writable directories are tmpfs charged to its memory) to one that can
// (the supervisor, which writes them to disk): a FIFO that the reading
// side makes in the writer's directory. A FIFO holds no data blocks
// (only the pipe's buffer, StreamPipeBytes), so the writer's file system
// and memory stay small whatever the artifact's length, and a full pipe
// makes the writer wait (back-pressure). The reader bounds, counts and publishes the bytes
// it reads (Writer.ReadFrom): the bound is enforced on its side, the
// writer cannot pass it.

// StreamPipeBytes is the pipe buffer MakeStream asks for (the kernel's
// default for a process without CAP_SYS_RESOURCE is at most
// /proc/sys/fs/pipe-max-size, 1 MiB by default). Its pages are charged to
// the writer's memory cgroup as it fills them.
const StreamPipeBytes = 1 << 20

// StreamReader is the read end of a stream made by MakeStream. Read
// returns io.EOF only once a writer opened the stream and closed it
// again; before any writer came it waits. Close ends a waiting Read.
type StreamReader struct {
	f       *os.File
	rc      syscall.RawConn
	display string
	eof     bool
	// final: no writer can come any more (Drain); a Read then never
	// waits, and an empty pipe is the end.
	final atomic.Bool
	// poll is poll(2) (tests put a writer's whole life, or a signal,
	// between the empty read and the poll).
	poll func(fds []unix.PollFd, timeout int) (int, error)
}

// MakeStream makes a FIFO called name (one component) in d, mode 0600 and
// owned by the owner of d (the worker whose directory it is), and opens
// its read end, non-blocking. The entry must not exist. The writer may
// replace the entry afterwards: the descriptor keeps this FIFO, and what
// a writer puts into another one never reaches this reader.
func (d *Dir) MakeStream(name string) (*StreamReader, error) {
	sfd, display, err := d.makeFIFO("stream", name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	// A pipe of StreamPipeBytes rather than 64 KiB: a writer that writes
	// faster than the reader is scheduled (a prover on a loaded host)
	// waits once per MiB, not once per 64 KiB. Best effort: a smaller
	// pipe (pipe-max-size) is only slower.
	unix.FcntlInt(uintptr(sfd), unix.F_SETPIPE_SZ, StreamPipeBytes)
	// NewFile of a non-blocking descriptor registers it with the runtime's
	// poller, so a Read waits without a thread and Close ends it.
	f := os.NewFile(uintptr(sfd), display)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("artifacts: stream %s: %w", display, err)
	}
	return &StreamReader{f: f, rc: rc, display: display}, nil
}

// Read reads what a writer wrote. A FIFO's read returns 0 both before any
// writer opened it and after the last one closed it; only the second is
// the end (POLLHUP, which Linux reports only once a writer came since the
// open). Before that, Read waits for the writer.
func (s *StreamReader) Read(p []byte) (int, error) {
	if s.eof {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if s.final.Load() {
		return s.readFinal(p)
	}
	var n int
	var rerr error
	err := s.rc.Read(func(fd uintptr) bool {
		for {
			n, rerr = unix.Read(int(fd), p)
			switch {
			case rerr == unix.EINTR:
				continue
			case rerr == unix.EAGAIN:
				n, rerr = 0, nil
				return false
			case rerr != nil || n > 0:
				return true
			}
			readable, hup, perr := s.peek(int(fd))
			switch {
			case perr != nil:
				rerr = perr
				return true
			case readable:
				// A writer came, wrote and may have left since the
				// read: what it wrote is read before its end is.
				continue
			case hup:
				s.eof = true
				return true
			}
			return false // no writer yet
		}
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && s.final.Load():
		return s.readFinal(p)
	case err != nil:
		return 0, fmt.Errorf("artifacts: read stream %s: %w", s.display, err)
	case rerr != nil:
		return n, fmt.Errorf("artifacts: read stream %s: %w", s.display, rerr)
	case s.eof:
		return 0, io.EOF
	}
	return n, nil
}

// peek polls the read end without waiting: whether it holds bytes, and
// whether a writer came and left. A signal (the runtime's preemption, a
// child's exit) interrupts even a poll that does not wait; it is asked
// again, never taken for the stream's failure.
func (s *StreamReader) peek(fd int) (readable, hup bool, err error) {
	poll := s.poll
	if poll == nil {
		poll = unix.Poll
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		_, err = poll(fds, 0)
		if err != unix.EINTR {
			break
		}
	}
	return fds[0].Revents&unix.POLLIN != 0, fds[0].Revents&unix.POLLHUP != 0, err
}

// Drain tells the reader that no writer can open the stream any more (the
// writing process is gone): a Read then returns what is left in the pipe
// and io.EOF, without waiting, also when no writer ever came (which a
// FIFO cannot tell). It wakes a Read waiting on another goroutine.
func (s *StreamReader) Drain() {
	s.final.Store(true)
	s.f.SetReadDeadline(time.Now()) // an error only when closed
}

// readFinal reads without waiting: data, or the end.
func (s *StreamReader) readFinal(p []byte) (int, error) {
	var n int
	var rerr error
	err := s.rc.Control(func(fd uintptr) {
		for {
			n, rerr = unix.Read(int(fd), p)
			if rerr != unix.EINTR {
				return
			}
		}
	})
	switch {
	case err != nil:
		return 0, fmt.Errorf("artifacts: read stream %s: %w", s.display, err)
	case rerr == unix.EAGAIN || (rerr == nil && n == 0):
		s.eof = true
		return 0, io.EOF
	case rerr != nil:
		return 0, fmt.Errorf("artifacts: read stream %s: %w", s.display, rerr)
	}
	return n, nil
}

// Close closes the read end: a Read waiting on another goroutine returns
// (os.ErrClosed), and a writer's next write fails with EPIPE. The FIFO's
// entry stays in the writer's directory (it holds no data).
func (s *StreamReader) Close() error {
	if err := s.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("artifacts: close stream %s: %w", s.display, err)
	}
	return nil
}

// OpenStream opens the write end of the stream name (one component) in d,
// for the process whose directory it is: ErrNotFound when there is none,
// ErrNotRegular when name is anything but a FIFO (or a FIFO nobody
// reads). It never follows a symlink and never blocks: writes wait, in
// the runtime's poller, while the pipe is full.
func (d *Dir) OpenStream(name string) (*os.File, error) {
	if !ValidName(name) || strings.Contains(name, "/") {
		return nil, fmt.Errorf("artifacts: open stream %q in %s: %w", name, d.path, ErrUnsafePath)
	}
	display := d.path + "/" + name
	fd, release, err := d.acquire("open stream " + name)
	if err != nil {
		return nil, err
	}
	defer release()
	// Stat first: a regular file under the name is never opened for
	// writing.
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, openErr("stat stream", display, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil, fmt.Errorf("artifacts: open stream %s: %w", display, ErrNotRegular)
	}
	sfd, err := retryEINTR(func() (int, error) {
		return unix.Openat(fd, name, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		// ENXIO: a FIFO without a reader.
		return nil, openErr("open stream", display, err)
	}
	if err := unix.Fstat(sfd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		unix.Close(sfd)
		return nil, fmt.Errorf("artifacts: open stream %s: %w", display, ErrNotRegular)
	}
	return os.NewFile(uintptr(sfd), display), nil
}
