package artifacts

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Reader reads one artifact and refuses to go past its limit: a file that
// grew beyond the limit after it was opened fails with ErrTooLarge instead
// of being cut short silently. It is not safe for concurrent use.
type Reader struct {
	f       *os.File
	display string
	size    int64
	limit   int64
	n       int64
	err     error
}

// OpenFile opens the artifact name for reading, at most limit bytes. It
// refuses symlinks anywhere in the name, names leaving the directory
// (ErrUnsafePath), anything but a regular file (ErrNotRegular; the open
// never blocks on a FIFO), a file with more than one hard link (ErrUnsafePath:
// it may be a file from outside linked in), and a file whose size already
// exceeds limit (ErrTooLarge).
func (d *Dir) OpenFile(name string, limit int64) (*Reader, error) {
	comps, err := splitName(name)
	if err != nil {
		return nil, err
	}
	display := d.path + "/" + name
	if limit < 0 {
		return nil, fmt.Errorf("artifacts: open %s: negative limit %d", display, limit)
	}
	dirfd, release, err := d.acquire("open " + name)
	if err != nil {
		return nil, err
	}
	fd, err := openBeneath(dirfd, comps, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, display)
	release()
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("artifacts: fstat %s: %w", display, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		unix.Close(fd)
		return nil, fmt.Errorf("artifacts: open %s: mode %#o: %w", display, st.Mode&unix.S_IFMT, ErrNotRegular)
	case st.Nlink != 1:
		unix.Close(fd)
		return nil, fmt.Errorf("artifacts: open %s: %d hard links: %w", display, st.Nlink, ErrUnsafePath)
	case st.Size > limit:
		unix.Close(fd)
		return nil, fmt.Errorf("artifacts: open %s: size %d exceeds limit %d: %w", display, st.Size, limit, ErrTooLarge)
	}
	return &Reader{f: os.NewFile(uintptr(fd), display), display: display, size: st.Size, limit: limit}, nil
}

// Size returns the file's size when it was opened.
func (r *Reader) Size() int64 { return r.size }

// Read reads up to the limit; reaching a byte past it returns the bytes up to
// the limit together with ErrTooLarge, and ErrTooLarge from then on.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Ask for one byte more than may be left, to see a crossing.
	if rem := r.limit - r.n; int64(len(p)) > rem {
		p = p[:rem+1]
	}
	n, err := r.f.Read(p)
	if r.n+int64(n) > r.limit {
		n = int(r.limit - r.n)
		r.n = r.limit
		r.err = fmt.Errorf("artifacts: read %s: more than %d bytes: %w", r.display, r.limit, ErrTooLarge)
		return n, r.err
	}
	r.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = fmt.Errorf("artifacts: read %s: %w", r.display, err)
		return n, r.err
	}
	return n, err
}

// Close releases the file.
func (r *Reader) Close() error {
	if r.f == nil {
		return fmt.Errorf("artifacts: close %s: %w", r.display, ErrClosed)
	}
	err := r.f.Close()
	r.f = nil
	if r.err == nil {
		r.err = fmt.Errorf("artifacts: read %s: %w", r.display, ErrClosed)
	}
	if err != nil {
		return fmt.Errorf("artifacts: close %s: %w", r.display, err)
	}
	return nil
}

// ReadFile returns the content of the artifact name, at most limit bytes,
// with the refusals of OpenFile.
func (d *Dir) ReadFile(name string, limit int64) ([]byte, error) {
	r, err := d.OpenFile(name, limit)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// Sized from fstat (already checked against limit); one spare byte
	// lets the read that proves EOF, or a crossing, avoid a reallocation.
	buf := make([]byte, 0, r.size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ReadCompressed reads the zstd artifact name, at most limit bytes on disk,
// and decompresses it to at most maxSize bytes (see Decompress).
func (d *Dir) ReadCompressed(name string, limit, maxSize int64) ([]byte, error) {
	c, err := d.ReadFile(name, limit)
	if err != nil {
		return nil, err
	}
	out, err := Decompress(c, maxSize)
	if err != nil {
		return nil, fmt.Errorf("artifacts: read %s/%s: %w", d.path, name, err)
	}
	return out, nil
}
