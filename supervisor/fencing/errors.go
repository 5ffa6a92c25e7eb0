package fencing

import (
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Refusal is why the engine refused an action. Each maps onto one code
// of protocol's error table, which gives its exit status and retry hint
// (docs/fencing.md, "Refusals"; docs/errors.md).
type Refusal string

const (
	// Fenced: the placement moved (another generation or worker), or the
	// token was made for another worker.
	Fenced Refusal = "fenced"
	// Denied: the current grant does not permit it (disabled, another
	// policy or epoch, act or prog not granted), or a bound is exceeded.
	Denied Refusal = "denied"
	// Conflict: a stale CAS expectation, or a record that contradicts
	// what is stored (another outcome, altered token metadata).
	Conflict Refusal = "conflict"
	// UnknownOutcome: the attempt may have run and has no outcome: only
	// reconciliation resolves it, and nothing ever dispatches it again.
	UnknownOutcome Refusal = "unknown_outcome"
	// Busy: it would break a rule of something in progress (live
	// invocations, a pending operation, an open reservation, max in
	// flight).
	Busy Refusal = "busy"
	// Unsupported: a profile, machine, environment or act this host does
	// not offer.
	Unsupported Refusal = "unsupported"
	// Lifecycle: the prog or invocation is not in a state that allows it.
	Lifecycle Refusal = "lifecycle"
	// Budget: the invocation's steps are used up.
	Budget Refusal = "budget"
	// Missing: no such neuron, prog, invocation, operation or attempt.
	Missing Refusal = "missing"
)

// Refusals lists every refusal in the order docs/fencing.md tabulates.
var Refusals = []Refusal{Fenced, Conflict, UnknownOutcome, Denied, Busy, Unsupported, Lifecycle, Budget, Missing}

// Code is the refusal's code: a contract code, or the API's busy (as
// for a full job queue: no contract code says "busy").
func (r Refusal) Code() protocol.Code {
	switch r {
	case Fenced, Conflict, UnknownOutcome:
		return protocol.CodeStaleState
	case Denied:
		return protocol.CodeClaimMismatch
	case Busy:
		return protocol.CodeBusy
	case Unsupported:
		return protocol.CodeUnsupportedProfile
	case Budget:
		return protocol.CodeBudgetExhausted
	default: // Lifecycle, Missing
		return protocol.CodeInvalidJob
	}
}

// Error is a refusal with a safe message (ids and numbers, never
// arguments, values or keys). Operation and Attempt name an unknown
// attempt that needs reconciliation.
type Error struct {
	Refusal   Refusal
	Message   string
	Operation string
	Attempt   uint32
}

func (e *Error) Error() string { return string(e.Refusal) + ": " + e.Message }

// Is matches a sentinel of the same refusal (ErrFenced, ...).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Refusal == e.Refusal
}

// Sentinels for errors.Is.
var (
	ErrFenced         = &Error{Refusal: Fenced}
	ErrDenied         = &Error{Refusal: Denied}
	ErrConflict       = &Error{Refusal: Conflict}
	ErrUnknownOutcome = &Error{Refusal: UnknownOutcome}
	ErrBusy           = &Error{Refusal: Busy}
	ErrUnsupported    = &Error{Refusal: Unsupported}
	ErrLifecycle      = &Error{Refusal: Lifecycle}
	ErrBudget         = &Error{Refusal: Budget}
	ErrMissing        = &Error{Refusal: Missing}
)

func refuse(r Refusal, format string, args ...any) *Error {
	return &Error{Refusal: r, Message: fmt.Sprintf(format, args...)}
}

// unknown is the refusal for an attempt that needs reconciliation; its
// message says how.
func unknown(op string, n uint32, why string) *Error {
	return &Error{Refusal: UnknownOutcome, Operation: op, Attempt: n,
		Message: fmt.Sprintf("%s: attempt %d of operation %s has an unknown outcome and needs reconciliation %s", why, n, op, ReconcileHint(op, n))}
}

// noNeuron refuses what needs the home's neuron on a home that has none.
func noNeuron() *Error {
	return refuse(Missing, "this home has no neuron (run `cyber-supervisor neuron init`)")
}

// ReconcileHint is the command that settles attempt n of operation op,
// as the messages of an unknown outcome suggest it.
func ReconcileHint(op string, n uint32) string {
	return fmt.Sprintf("(`cyber-supervisor operation reconcile %s --attempt %d --value V | --failed MESSAGE`)", op, n)
}

// AsRefusal finds the refusal in err's chain.
func AsRefusal(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// ProtocolError maps err onto the error table: a refusal gets its code
// and the code's retry hint, and keeps its message (which starts with the
// refusal's name); a *protocol.Error is itself; anything else is an
// internal error without its text, which was never vetted.
func ProtocolError(err error) *protocol.Error {
	if err == nil {
		return nil
	}
	if e, ok := AsRefusal(err); ok {
		c := e.Refusal.Code()
		return &protocol.Error{Code: c, Message: e.Error(), Retryable: c.Retryable()}
	}
	return protocol.AsError(err)
}
