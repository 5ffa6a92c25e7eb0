// Package lifecycle is the state machine of jobs and attempts: which
// transitions exist, which states are terminal. It holds no I/O; the store
// applies transitions inside its transactions and refuses everything this
// package does not allow.
package lifecycle

import "fmt"

// State of an attempt, and (see JobState) of a job.
type State string

// Attempt states of the worker contract, plus unknown: an attempt whose
// worker may have run but whose outcome the supervisor never learned
// (it crashed or restarted meanwhile). Unknown attempts are never
// dispatched again automatically.
const (
	Queued    State = "queued"
	Running   State = "running"
	Produced  State = "produced"
	Verified  State = "verified"
	Accepted  State = "accepted"
	Rejected  State = "rejected"
	Failed    State = "failed"
	Cancelled State = "cancelled"
	Unknown   State = "unknown"
)

// States lists every state.
var States = []State{Queued, Running, Produced, Verified, Accepted, Rejected, Failed, Cancelled, Unknown}

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	for _, k := range States {
		if s == k {
			return true
		}
	}
	return false
}

// Terminal states never change again.
func (s State) Terminal() bool {
	switch s {
	case Accepted, Rejected, Failed, Cancelled, Unknown:
		return true
	}
	return false
}

// next lists the transitions of an attempt. Cancellation is possible until
// the node has decided. A cancel that comes once the result is verified
// is still honoured, by the acceptance's own transaction: the attempt
// ends rejected (code cancelled), the one end besides accepted that
// verified allows, and its job cancelled. running → rejected is a verify
// job whose worker refused the certificate and whose refusal the node's
// own verifier confirmed: nothing was produced, and the job's answer is
// the rejection.
var next = map[State][]State{
	Queued:   {Running, Cancelled, Failed, Unknown},
	Running:  {Produced, Rejected, Failed, Cancelled, Unknown},
	Produced: {Verified, Rejected, Cancelled, Failed, Unknown},
	Verified: {Accepted, Rejected, Unknown},
}

// CanMove reports whether an attempt may go from s to t.
func CanMove(s, t State) bool {
	for _, n := range next[s] {
		if n == t {
			return true
		}
	}
	return false
}

// Move returns an error unless s → t is allowed.
func Move(s, t State) error {
	if !CanMove(s, t) {
		return &TransitionError{From: s, To: t}
	}
	return nil
}

// TransitionError is a refused transition.
type TransitionError struct{ From, To State }

func (e *TransitionError) Error() string {
	return fmt.Sprintf("transition %s → %s is not allowed", e.From, e.To)
}
