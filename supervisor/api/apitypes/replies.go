package apitypes

import (
	"encoding/json"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// ErrorReply is every error answer of the API, and a job's own error
// from GET /v1/jobs/{id}/result: the contract's error shape.
type ErrorReply struct {
	Error *protocol.Error `json:"error"`
}

// SubmitRequest is the body of POST /v1/jobs (protocol.ParseSubmission
// reads it strictly on the server; its numbers are JSON numbers).
type SubmitRequest struct {
	Spec     json.RawMessage `json:"spec"`
	Priority int32           `json:"priority,omitempty"`
	Retry    *RetryRequest   `json:"retry,omitempty"`
}

// RetryRequest is a submission's retry policy.
type RetryRequest struct {
	MaxAttempts  uint32          `json:"max_attempts"`
	BackoffNS    int64           `json:"backoff_ns"`
	MaxBackoffNS int64           `json:"max_backoff_ns"`
	Retryable    []protocol.Code `json:"retryable"`
}

// SubmitReply answers POST /v1/jobs: the job, and whether this request
// created it (201) or found it submitted already with the same payload
// (200).
type SubmitReply struct {
	Job     Job  `json:"job"`
	Created bool `json:"created"`
}

// Submitted is what the CLI's submit prints.
type Submitted struct {
	JobID   string          `json:"job_id"`
	State   lifecycle.State `json:"state"`
	Created bool            `json:"created"`
}

// CancelReply answers POST /v1/jobs/{id}/cancel.
type CancelReply struct {
	Job          Job  `json:"job"`
	Requested    bool `json:"requested"`    // a cancel was recorded now
	Acknowledged bool `json:"acknowledged"` // the worker acknowledged it in time
	AlreadyDone  bool `json:"already_done"` // the job had ended before
}

// Cancelled is what the CLI's cancel prints.
type Cancelled struct {
	JobID        string          `json:"job_id"`
	State        lifecycle.State `json:"state"`
	Requested    bool            `json:"requested"`
	Acknowledged bool            `json:"acknowledged"`
	AlreadyDone  bool            `json:"already_done"`
}

// ResolveReply answers POST /v1/jobs/{id}/resolve, and is what the
// CLI's resolve prints: Resolved is false when the same resolution had
// been made already.
type ResolveReply struct {
	Job      Job  `json:"job"`
	Resolved bool `json:"resolved"`
}

// Left names the job a CLI command stopped waiting for on a signal (the
// envelope's result beside its interrupted error): its state then, or
// for events --follow the events seen so far.
type Left struct {
	JobID  string          `json:"job_id"`
	State  lifecycle.State `json:"state,omitempty"`
	Events []Event         `json:"events,omitempty"`
}

// GCReport answers POST /v1/gc, and is what the CLI's gc prints.
type GCReport struct {
	// EndedBefore is the cutoff: jobs that ended before it were removed.
	EndedBefore time.Time    `json:"ended_before"`
	Removed     []RemovedJob `json:"removed"`
}

// RemovedJob is a job a collection removed (its tombstone stays).
type RemovedJob struct {
	JobID string          `json:"job_id"`
	State lifecycle.State `json:"state"`
	Ended time.Time       `json:"ended"`
}

// DrainStatus answers POST and GET /v1/drain: where a drain stands.
type DrainStatus struct {
	Draining bool `json:"draining"`
	// Deadline: attempts still running then are handed back to the
	// queue.
	Deadline time.Time `json:"deadline,omitzero"`
	// Running are the ids of the jobs whose attempts run on this
	// supervisor now.
	Running []string `json:"running"`
	// Done: nothing runs any more, or the deadline passed; the daemon
	// exits.
	Done bool `json:"done"`
}

// DrainStarted is what the CLI's drain prints when it does not wait
// (--no-wait), or stops waiting on a signal: the drain's deadline, the
// jobs whose attempts run, and the daemon's pid when it could be read.
type DrainStarted struct {
	Deadline time.Time `json:"deadline"`
	Running  []string  `json:"running"`
	PID      int       `json:"pid,string,omitempty"`
}

// DrainReport is what the CLI's drain prints once the daemon drained:
// the jobs whose attempts ended and those handed back to the queue.
type DrainReport struct {
	Deadline   time.Time `json:"deadline"`
	Ended      []string  `json:"ended"`
	HandedBack []string  `json:"handed_back"`
	// Unsaid: attempts running at the last answer, the daemon gone
	// before it said whether they ended or were handed back (status
	// tells).
	Unsaid []string `json:"unsaid,omitempty"`
	Exited bool     `json:"exited"`
	PID    int      `json:"pid,string,omitempty"`
}
