package artifacts

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A feed is a stream the other way round (stream_linux.go): a FIFO that
// the writing side (the supervisor) makes in the reader's directory (a
// jailed worker's work dir), to give it a file the reader cannot reach
// (a certificate in the supervisor's home) without copying it there: the
// FIFO holds no data blocks, only the pipe's buffer, so the reader's
// file system and memory stay small whatever the file's length, and a
// full pipe makes the writer wait. The writer bounds what it writes; the
// reader bounds what it reads.
//
// The writer opens its end only once a reader has opened its own
// (Feed.Open): a FIFO's buffer lives only while some end is open, so a
// writer that wrote a short file and closed before the reader came would
// leave it an empty pipe. open(2) of a FIFO for writing without a reader
// fails (ENXIO) and nothing announces a reader, so the writer tries
// again, at growing intervals (FeedPollMax at most), until one came or it
// is told to stop.

// FeedPollMax bounds the interval at which Feed.Open looks for a reader.
const FeedPollMax = 20 * time.Millisecond

// Feed is the write side of a FIFO made by MakeFeed.
type Feed struct {
	path    int // O_PATH descriptor of the FIFO made (owned)
	display string
}

// MakeFeed makes a FIFO called name (one component) in d, mode 0600 and
// owned by the owner of d (the process that reads it), and keeps an
// O_PATH descriptor of it: Open opens that FIFO, whatever the reader puts
// under the name afterwards. The entry must not exist.
func (d *Dir) MakeFeed(name string) (*Feed, error) {
	pfd, display, err := d.makeFIFO("feed", name, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	return &Feed{path: pfd, display: display}, nil
}

// Open opens the write end once a reader has opened the FIFO, or fails
// with ErrClosed once stop is closed first. The file is non-blocking
// (its writes wait in the runtime's poller while the pipe is full, and
// its Close ends a waiting Write); a write after the reader closed its
// end fails (EPIPE). Closing the file is the reader's end of file.
func (f *Feed) Open(stop <-chan struct{}) (*os.File, error) {
	// Through /proc: the FIFO made, never what the name holds now.
	proc := "/proc/self/fd/" + strconv.Itoa(f.path)
	wait := time.Millisecond
	for {
		wfd, err := retryEINTR(func() (int, error) {
			return unix.Open(proc, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		})
		if err == nil {
			var st unix.Stat_t
			if err := unix.Fstat(wfd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
				unix.Close(wfd)
				return nil, fmt.Errorf("artifacts: open feed %s: %w", f.display, ErrNotRegular)
			}
			unix.FcntlInt(uintptr(wfd), unix.F_SETPIPE_SZ, StreamPipeBytes) // best effort, as MakeStream
			return os.NewFile(uintptr(wfd), f.display), nil
		}
		if !errors.Is(err, unix.ENXIO) {
			return nil, openErr("open feed", f.display, err)
		}
		// No reader yet.
		t := time.NewTimer(wait)
		select {
		case <-stop:
			t.Stop()
			return nil, fmt.Errorf("artifacts: open feed %s: no reader came: %w", f.display, ErrClosed)
		case <-t.C:
		}
		wait = min(2*wait, FeedPollMax)
	}
}

// Close releases the FIFO's descriptor (its entry stays in the reader's
// directory; it holds no data).
func (f *Feed) Close() error {
	if f.path < 0 {
		return nil
	}
	err := unix.Close(f.path)
	f.path = -1
	if err != nil {
		return fmt.Errorf("artifacts: close feed %s: %w", f.display, err)
	}
	return nil
}

// OpenFeedReader opens the read end of the feed name (one component) in
// d, for the process whose directory it is: ErrNotFound when there is
// none, ErrNotRegular when name is anything but a FIFO. It never follows
// a symlink. It waits until the writer opened its end (or stop is closed:
// ErrClosed), so that an empty read after it is the writer's end of
// file: a FIFO's read returns 0 both before any writer came and after the
// last one left, and telling the two apart otherwise takes poll(2), which
// a jailed worker's seccomp filter does not allow. The file returned is
// non-blocking (its reads wait in the runtime's poller, and its Close
// ends a waiting Read).
func (d *Dir) OpenFeedReader(name string, stop <-chan struct{}) (*os.File, error) {
	if !ValidName(name) || strings.Contains(name, "/") {
		return nil, fmt.Errorf("artifacts: open feed %q in %s: %w", name, d.path, ErrUnsafePath)
	}
	display := d.path + "/" + name
	fd, release, err := d.acquire("open feed " + name)
	if err != nil {
		return nil, err
	}
	defer release()
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, openErr("stat feed", display, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil, fmt.Errorf("artifacts: open feed %s: %w", display, ErrNotRegular)
	}
	type opened struct {
		fd  int
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		// A blocking open of a FIFO waits for a writer; the reader it
		// makes counts as one for the writer's non-blocking open.
		rfd, err := retryEINTR(func() (int, error) {
			return unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		})
		ch <- opened{rfd, err}
	}()
	var o opened
	select {
	case o = <-ch:
	case <-stop:
		// Release the waiting open with a writer of our own, which
		// writes nothing. Its non-blocking open fails (ENXIO) until the
		// open above is waiting: tried again until that returns.
		for {
			if wfd, err := unix.Openat(fd, name, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(wfd)
			}
			t := time.NewTimer(time.Millisecond)
			select {
			case o = <-ch:
				t.Stop()
				if o.err == nil {
					unix.Close(o.fd)
				}
				return nil, fmt.Errorf("artifacts: open feed %s: no writer came: %w", display, ErrClosed)
			case <-t.C:
			}
		}
	}
	if o.err != nil {
		return nil, openErr("open feed", display, o.err)
	}
	if err := unix.Fstat(o.fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		unix.Close(o.fd)
		return nil, fmt.Errorf("artifacts: open feed %s: %w", display, ErrNotRegular)
	}
	if err := unix.SetNonblock(o.fd, true); err != nil {
		unix.Close(o.fd)
		return nil, fmt.Errorf("artifacts: open feed %s: %w", display, err)
	}
	return os.NewFile(uintptr(o.fd), display), nil
}
