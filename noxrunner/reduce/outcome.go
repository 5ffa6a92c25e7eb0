// Package reduce is the nox reduction engine: patterns 0–17 with their
// costs, the static cost bound and the budget reservation rule, the
// recursion-depth limit, and call/look through a Provider. It is bit-exact
// with the reference semantics (results, costs, remaining budget, halts and
// error kinds) and has no jets.
package reduce

import (
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// Status is how a reduction ended.
type Status uint8

const (
	OK    Status = iota // a result and the remaining budget
	Halt                // the budget ran out; Remaining is the local budget
	Error               // a semantic error of kind ErrorKind
)

var statusNames = [...]string{"ok", "halt", "error"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", s)
}

// ErrorKind numbers are the reference's codes.
type ErrorKind uint8

const (
	TypeError    ErrorKind = 0
	AxisError    ErrorKind = 1
	InvZero      ErrorKind = 2
	Unavailable  ErrorKind = 3
	Malformed    ErrorKind = 4
	CallRejected ErrorKind = 5
)

var kindNames = [...]string{"TypeError", "AxisError", "InvZero", "Unavailable", "Malformed", "CallRejected"}

func (k ErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", k)
}

// Outcome is the semantic result of a reduction.
type Outcome struct {
	Status    Status
	Result    noun.Noun // when OK
	Remaining uint64    // when OK or Halt
	Kind      ErrorKind // when Error
}

// Cost is budget − Remaining for an OK outcome.
func (o Outcome) Cost(budget uint64) uint64 { return budget - o.Remaining }

// Aborts are not outcomes: the run was stopped by its host, and nothing
// about the program's result may be published.
var (
	// ErrCancelled wraps the context's error when a run is cancelled.
	ErrCancelled = errors.New("reduction cancelled")
	// ErrCellLimit is returned when a run holds more than its memory
	// bound allows (Config.MaxCells, and a prover's bounds).
	ErrCellLimit = errors.New("reduction exceeded its memory bound")
	// ErrStepLimit is returned when a run takes more steps than allowed.
	ErrStepLimit = errors.New("reduction exceeded its step limit")
	// ErrUnsupportedService is matched by UnsupportedServiceError.
	ErrUnsupportedService = errors.New("unsupported service")
)

// UnsupportedServiceError is the public profile's refusal of a reached call
// (tag 16) or look (tag 17) formula.
type UnsupportedServiceError struct{ Pattern uint64 }

func (e *UnsupportedServiceError) Error() string {
	name := "call"
	if e.Pattern == 17 {
		name = "look"
	}
	return fmt.Sprintf("unsupported service: pattern %d (%s) is refused by this profile", e.Pattern, name)
}

func (e *UnsupportedServiceError) Unwrap() error { return ErrUnsupportedService }
