package launch

import (
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// ErrHostileWorker marks a launch the worker broke on purpose, such as
// announcing a socket it did not bind. The attempt fails with
// internal_error and is never retried: a retry would only hand the job to
// another copy of the same binary.
var ErrHostileWorker = errors.New("hostile worker")

// hostileError is what Launch returns for a hostile worker: the contract
// error for the attempt, and ErrHostileWorker in its chain.
type hostileError struct {
	pe *protocol.Error
}

func (e *hostileError) Error() string { return e.pe.Error() }

// Unwrap exposes both the contract error (for launchError) and the
// sentinel (for the retry decision).
func (e *hostileError) Unwrap() []error { return []error{e.pe, ErrHostileWorker} }

func hostileWorker(cause error) error {
	return &hostileError{pe: &protocol.Error{Code: protocol.CodeInternalError, Retryable: false,
		Message: protocol.SafeMessage(fmt.Sprintf("worker refused: %v", cause))}}
}
