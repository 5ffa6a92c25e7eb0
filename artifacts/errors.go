package artifacts

import "errors"

var (
	// ErrTooLarge means a size limit was reached: an artifact being written,
	// a file being read, or the declared content of a compressed frame.
	ErrTooLarge = errors.New("artifacts: size limit exceeded")

	// ErrUnsafePath means a name or a path component was refused: a
	// symlink, "..", an absolute name, a name outside the allowed alphabet,
	// a hard-linked file, or a crossing into another file system.
	ErrUnsafePath = errors.New("artifacts: unsafe path")

	// ErrNotRegular means the name exists but is not a regular file (a
	// FIFO, a device, a socket or a directory).
	ErrNotRegular = errors.New("artifacts: not a regular file")

	// ErrExists means the name is already taken and replacing it was not
	// asked for, or a sandbox for the attempt already exists.
	ErrExists = errors.New("artifacts: already exists")

	// ErrNotFound means the name, or one of its parent directories, does
	// not exist.
	ErrNotFound = errors.New("artifacts: not found")

	// ErrCorrupt means compressed data is malformed, lies about its size, or
	// does not declare its content size.
	ErrCorrupt = errors.New("artifacts: corrupt compressed data")

	// ErrClosed means the Dir, Root or Writer was already closed, committed
	// or aborted.
	ErrClosed = errors.New("artifacts: already closed")
)
