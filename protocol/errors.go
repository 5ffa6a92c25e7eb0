package protocol

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Error is the contract's error: a stable code, a message that is safe to
// show (no secrets, no file contents) and a retry hint.
type Error struct {
	Code      Code
	Message   string
	Retryable bool
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Is matches any *Error with the same code, so that errors.Is(err,
// ErrCancelled) works whatever the message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is; compare codes, never messages.
var (
	ErrInvalidJob         = &Error{Code: CodeInvalidJob}
	ErrUnsupportedProfile = &Error{Code: CodeUnsupportedProfile}
	ErrUnsupportedLimit   = &Error{Code: CodeUnsupportedLimit}
	ErrUnsupportedState   = &Error{Code: CodeUnsupportedState}
	ErrUnsupportedSecret  = &Error{Code: CodeUnsupportedSecret}
	ErrBudgetExhausted    = &Error{Code: CodeBudgetExhausted}
	ErrDeadlineExceeded   = &Error{Code: CodeDeadlineExceeded, Retryable: true}
	ErrMemoryExhausted    = &Error{Code: CodeMemoryExhausted, Retryable: true}
	ErrArtifactTooLarge   = &Error{Code: CodeArtifactTooLarge}
	ErrExecutionFailed    = &Error{Code: CodeExecutionFailed}
	ErrProofRejected      = &Error{Code: CodeProofRejected}
	ErrClaimMismatch      = &Error{Code: CodeClaimMismatch}
	ErrStaleState         = &Error{Code: CodeStaleState}
	ErrCancelled          = &Error{Code: CodeCancelled}
	ErrIOError            = &Error{Code: CodeIOError, Retryable: true}
	ErrInternalError      = &Error{Code: CodeInternalError, Retryable: true}
)

// Errorf builds an *Error with the code's default retry hint. The message
// is formatted from the arguments; callers must not pass secrets or file
// contents.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: code.Retryable()}
}

// CodeOf returns the code of err: the code of an *Error in its chain,
// cancelled or deadline_exceeded for context errors, internal_error for
// anything else, and "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return AsError(err).Code
}

// AsError maps any error onto the contract's error set at an API boundary.
// Errors that are not *Error get a generic message: their text was never
// vetted for secrets or file contents, so it does not cross the boundary.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Errorf(CodeCancelled, "cancelled")
	case errors.Is(err, context.DeadlineExceeded):
		return Errorf(CodeDeadlineExceeded, "deadline exceeded")
	}
	return Errorf(CodeInternalError, "internal error")
}

// ExplainAxisError adds to a program's AxisError ("nox error AxisError":
// it read a part of its subject that does not exist) how many inputs the
// job gave, the usual cause being an input it reads and was not given.
// Both CLIs say so the same way; other errors are left as they are.
func ExplainAxisError(e *Error, inputs int) {
	if e == nil || e.Code != CodeExecutionFailed || !strings.Contains(e.Message, "AxisError") {
		return
	}
	e.Message += fmt.Sprintf(" (the program read a part of its subject that does not exist: the job gave %d input(s); does it read more?)", inputs)
}
