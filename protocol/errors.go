package protocol

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Code is a stable error code of the worker contract.
type Code string

// The contract's required codes. Their spelling is the wire form.
const (
	CodeInvalidJob         Code = "invalid_job"
	CodeUnsupportedProfile Code = "unsupported_profile"
	CodeUnsupportedLimit   Code = "unsupported_limit"
	CodeUnsupportedState   Code = "unsupported_state"
	CodeUnsupportedSecret  Code = "unsupported_secret"
	CodeBudgetExhausted    Code = "budget_exhausted"
	CodeDeadlineExceeded   Code = "deadline_exceeded"
	CodeMemoryExhausted    Code = "memory_exhausted"
	CodeArtifactTooLarge   Code = "artifact_too_large"
	CodeExecutionFailed    Code = "execution_failed"
	CodeProofRejected      Code = "proof_rejected"
	CodeClaimMismatch      Code = "claim_mismatch"
	CodeStaleState         Code = "stale_state"
	CodeCancelled          Code = "cancelled"
	CodeIOError            Code = "io_error"
	CodeInternalError      Code = "internal_error"
)

// Codes lists every code, in the contract's order.
var Codes = []Code{
	CodeInvalidJob, CodeUnsupportedProfile, CodeUnsupportedLimit,
	CodeUnsupportedState, CodeUnsupportedSecret, CodeBudgetExhausted,
	CodeDeadlineExceeded, CodeMemoryExhausted, CodeArtifactTooLarge,
	CodeExecutionFailed, CodeProofRejected, CodeClaimMismatch,
	CodeStaleState, CodeCancelled, CodeIOError, CodeInternalError,
}

// Known reports whether c is one of the contract's codes.
func (c Code) Known() bool {
	for _, k := range Codes {
		if c == k {
			return true
		}
	}
	return false
}

// Retryable is the default retry hint of a code. Only failures caused by the
// environment rather than by the job are retryable: a deadline or memory
// limit may be met on a less loaded host, I/O may be transient, and an
// internal error (a crash, a bug, a lost connection) says nothing about the
// job. Everything else is a property of the payload and would fail again
// with the same bytes: budgets are deterministic, unsupported requests stay
// unsupported, a rejected proof stays rejected, stale state needs a new job
// rather than a new attempt, and a cancellation was somebody's decision. A
// retryable failure never authorizes weaker verification; the flag is a hint
// for the scheduler, nothing more.
func (c Code) Retryable() bool {
	switch c {
	case CodeDeadlineExceeded, CodeMemoryExhausted, CodeIOError, CodeInternalError:
		return true
	}
	return false
}

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
