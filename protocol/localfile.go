package protocol

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// ReadLocalFile is the one rule by which both CLIs (nox-worker and
// cyber-supervisor) read a file a user names (a program, an input file, a
// certificate): the last component is opened without following a symlink
// and without blocking (a FIFO or a device never holds the open), only a
// regular file is read, and the read is bounded by limit on the open
// descriptor's size and again by the bytes read. what names the file in
// messages ("program", "certificate"), which carry the path the user gave
// and never the contents. A file over the limit gets tooLarge; a missing
// file, a symlink and anything but a regular file get invalid_job; other
// failures io_error.
func ReadLocalFile(what, path string, limit int64, tooLarge Code) ([]byte, error) {
	f, size, err := OpenLocalFile(what, path, limit, tooLarge)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readSized(io.LimitReader(f, limit+1), size)
	if err != nil {
		return nil, Errorf(CodeIOError, "%s %s: read failed", what, path)
	}
	if int64(len(b)) > limit {
		return nil, Errorf(tooLarge, "%s %s: grew past %d bytes while being read", what, path, limit)
	}
	return b, nil
}

// OpenLocalFile opens a file a user names by ReadLocalFile's rule, for a
// caller that reads it streamed (a certificate stored by reference): the
// file, open, and its size, at most limit. The caller bounds its reads
// (the file may grow).
func OpenLocalFile(what, path string, limit int64, tooLarge Code) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ELOOP):
			return nil, 0, Errorf(CodeInvalidJob, "%s %s: is a symlink (name the file itself)", what, path)
		case errors.Is(err, os.ErrNotExist):
			return nil, 0, Errorf(CodeInvalidJob, "%s %s: does not exist", what, path)
		case errors.Is(err, os.ErrPermission):
			return nil, 0, Errorf(CodeIOError, "%s %s: permission denied", what, path)
		case errors.Is(err, syscall.ENXIO):
			// A FIFO without a writer, opened without blocking.
			return nil, 0, Errorf(CodeInvalidJob, "%s %s: not a regular file", what, path)
		}
		return nil, 0, Errorf(CodeIOError, "%s %s: cannot open", what, path)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, Errorf(CodeIOError, "%s %s: cannot stat", what, path)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, Errorf(CodeInvalidJob, "%s %s: not a regular file", what, path)
	}
	if st.Size() > limit {
		f.Close()
		return nil, 0, Errorf(tooLarge, "%s %s: %d bytes, at most %d", what, path, st.Size(), limit)
	}
	return f, st.Size(), nil
}

// readSized reads r to its end into a buffer of size bytes and one more
// (to see a file that grew), grown only when it did: io.ReadAll grows
// its buffer from 512 bytes, twice a large certificate in all.
func readSized(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, size+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
