package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Sentinels of conditions the worker detects itself; contractError maps
// them onto the contract's codes.
var (
	// ErrWorkDir: the run's work directory is missing, not a directory,
	// a symlink, or outside Config.WorkRoot (io_error).
	ErrWorkDir = errors.New("unusable work directory")
	// ErrOutputTooLarge: a result has more atoms than it can carry
	// (execution_failed).
	ErrOutputTooLarge = errors.New("output too large")
	// ErrCertificateTooLarge: a certificate exceeds the worker's bound
	// (artifact_too_large).
	ErrCertificateTooLarge = errors.New("certificate too large")
)

// contractError maps what an operation returned onto the contract's error
// set. It is called once, at the boundary of Run: below it errors are
// wrapped with the operation that failed; here the cause decides the code.
// Messages of errors that this package and noxrunner build are safe (they
// hold numbers, pattern names and operation names, never file contents);
// the text of other errors (file system, runtime) is not repeated.
func contractError(ctx context.Context, err error) *protocol.Error {
	if err == nil {
		return nil
	}
	var pe *protocol.Error
	var use *reduce.UnsupportedServiceError
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.As(err, &use):
		return unsupportedService(use.Pattern)
	case errors.Is(err, reduce.ErrCancelled), errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		return cancelError(ctx)
	case errors.Is(err, reduce.ErrCellLimit):
		return protocol.Errorf(protocol.CodeMemoryExhausted,
			"stopped early: the run outgrew the memory limit's share for nox data (%s)", err)
	case errors.Is(err, cert.ErrMismatch):
		return protocol.Errorf(protocol.CodeClaimMismatch, "%s", err)
	case errors.Is(err, cert.ErrRejected):
		return protocol.Errorf(protocol.CodeProofRejected, "%s", err)
	case errors.Is(err, ErrOutputTooLarge):
		return protocol.Errorf(protocol.CodeExecutionFailed, "%s", err)
	case errors.Is(err, ErrCertificateTooLarge), errors.Is(err, artifacts.ErrTooLarge), errors.Is(err, cert.ErrTooLarge):
		return protocol.Errorf(protocol.CodeArtifactTooLarge, "%s", err)
	case errors.Is(err, artifacts.ErrCorrupt):
		// Only the verify path decompresses, and what it decompresses is
		// the job's certificate: a broken frame is a broken certificate.
		return protocol.Errorf(protocol.CodeProofRejected, "certificate: not a single zstd frame that declares its size and decodes to it")
	case errors.Is(err, ErrWorkDir):
		return protocol.Errorf(protocol.CodeIOError, "%s", err)
	case isIOError(err):
		return protocol.Errorf(protocol.CodeIOError, "publishing the artifact failed: %s", ioCause(err))
	}
	return protocol.Errorf(protocol.CodeInternalError, "internal error")
}

// unsupportedService names why the public profile refused a call or look.
func unsupportedService(pattern uint64) *protocol.Error {
	if pattern == reduce.TagLook {
		return protocol.Errorf(protocol.CodeUnsupportedState,
			"the program reached look (pattern 17): the public stateless profile reads no state")
	}
	return protocol.Errorf(protocol.CodeUnsupportedSecret,
		"the program reached call (pattern 16): it asks for a witness, and the public profile takes no secret inputs")
}

// cancelError reports why ctx ended: the cause the plugin glue or Shutdown
// attached (a *protocol.Error), a deadline, or a plain cancellation.
func cancelError(ctx context.Context) *protocol.Error {
	var pe *protocol.Error
	if errors.As(context.Cause(ctx), &pe) {
		return pe
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return protocol.Errorf(protocol.CodeDeadlineExceeded, "deadline exceeded")
	}
	return protocol.Errorf(protocol.CodeCancelled, "cancelled")
}

// isIOError reports file-system failures: path errors, errnos and the
// artifacts package's refusals of unsafe or occupied names.
func isIOError(err error) bool {
	var pathErr *fs.PathError
	var errno syscall.Errno
	return errors.As(err, &pathErr) || errors.As(err, &errno) ||
		errors.Is(err, artifacts.ErrUnsafePath) || errors.Is(err, artifacts.ErrNotRegular) ||
		errors.Is(err, artifacts.ErrExists) || errors.Is(err, artifacts.ErrNotFound) ||
		errors.Is(err, artifacts.ErrClosed)
}

// ioCause is a short, content-free description of an I/O failure.
func ioCause(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, artifacts.ErrExists), errors.Is(err, fs.ErrExist):
		return "the artifact name is already taken"
	case errors.Is(err, artifacts.ErrUnsafePath):
		return "unsafe path"
	case errors.As(err, &errno):
		return errno.Error()
	}
	return "file system error"
}

// opError wraps err with the operation that failed.
func opError(op string, err error) error { return fmt.Errorf("%s: %w", op, err) }
