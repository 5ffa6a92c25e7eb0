package store

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// Meta is the store's own record. Its SchemaVersion is the layout of
// the driver that wrote it (bbolt's bolt.SchemaVersion, etcd's Schema).
type Meta struct {
	SchemaVersion int       `json:"schema_version"`
	Created       time.Time `json:"created"`
	// Boot is the id of the supervisor incarnation that owns the store
	// now; Boots counts incarnations (each start is a new boot).
	Boot  string `json:"boot"`
	Boots uint64 `json:"boots"`
	// NextSeq orders jobs first-in first-out and events within a job.
	NextSeq uint64 `json:"next_seq"`
	// Backup is set only in a copy written by store backup: a start on
	// that file (restored by store restore, or copied into place by hand)
	// finds it and fences the store (docs/store.md, "Recovering").
	Backup *BackupMark `json:"backup,omitempty"`
	// Fence is what the last fence of a restored store recorded; the
	// invocations it fenced never act again by themselves.
	Fence *RestoreFence `json:"fence,omitempty"`
}

// BackupMark says a store file is a backup copy, and of what.
type BackupMark struct {
	Taken time.Time `json:"taken"`
	Boot  string    `json:"boot"`  // the boot that owned the store when it was copied
	Boots uint64    `json:"boots"` // and its number
}

// RestoreFence is the record of a restored store's fence: every
// invocation it found (its seq at most Invocations) may have acted after
// the backup, so none acts again by itself: each operation it proposes
// gets a restored attempt (ExecutorRestored) that only its owner's
// reconciliation resolves.
type RestoreFence struct {
	At          time.Time `json:"at"`
	Restores    uint64    `json:"restores"`           // fences of this store so far
	Invocations uint64    `json:"invocations,string"` // the highest invocation seq fenced
	Reason      string    `json:"reason"`             // what showed the store older than its home
	// Emitted is how many lines emit.jsonl held: those were written
	// before the fence (some by the history the store forgot), and their
	// claims are not looked for again.
	Emitted uint64 `json:"emitted,string,omitempty"`
}

// Fences reports whether the invocation of seq was fenced by a restore.
func (m *Meta) Fences(seq uint64) bool { return m.Fence != nil && seq <= m.Fence.Invocations }

// RetryPolicy says when a failed attempt is followed by another.
type RetryPolicy struct {
	MaxAttempts uint32          `json:"max_attempts"` // ≥ 1; 1 means no retry
	Backoff     time.Duration   `json:"backoff_ns"`   // before attempt n+1: Backoff·2^(n-1), capped
	MaxBackoff  time.Duration   `json:"max_backoff_ns"`
	Retryable   []protocol.Code `json:"retryable"` // codes that may be retried; nil: the codes' defaults
}

// Job is an admitted job. Its frozen, canonical job spec is not part of
// the record: it is written once, with the job (Tx.CreateJob), in the
// specs bucket and read with Tx.Spec; SpecDigest is its SHA-256.
type Job struct {
	ID         string `json:"id"`
	SpecDigest string `json:"spec_digest"` // sha256 hex of the frozen spec
	// RequestDigest is the SHA-256 hex of the canonical spec as it was
	// submitted, when the frozen spec differs from it (the operator's
	// default limits were filled in): resubmissions are compared by it.
	RequestDigest string `json:"request_digest,omitempty"`
	Operation     string `json:"operation"`
	// Program is the particle of the job's program (hex), the identity
	// the dashboard filters by; "" for a job admitted before it was kept.
	// Like the spec it never changes.
	Program  string          `json:"program,omitempty"`
	Priority int32           `json:"priority"`
	Retry    RetryPolicy     `json:"retry"`
	Seq      uint64          `json:"seq"`
	State    lifecycle.State `json:"state"`
	// Attempts is how many attempts were prepared.
	Attempts uint32 `json:"attempts"`
	// Interrupted counts the attempts the supervisor's own shutdown
	// interrupted (a stop or a drain): each is requeued whatever the
	// retry policy, and none counts against it (AttemptsAllowed).
	Interrupted uint32 `json:"interrupted,omitempty"`
	// Granted counts the attempts the operator gave the job by resolving
	// an unknown attempt with a retry (Resolution), beyond its policy.
	Granted uint32 `json:"granted,omitempty"`
	// Resolved is the operator's last resolution of the job's unknown
	// attempt (resolve, or cancel of an unknown job): nil if none.
	Resolved *Resolution `json:"resolved,omitempty"`
	// Accepted is the accepted attempt (0: none).
	Accepted        uint32 `json:"accepted,omitempty"`
	CancelRequested bool   `json:"cancel_requested,omitempty"`
	// CancelReason is the reason the first cancel request gave: whichever
	// host runs the attempt, its cancellation says it (a cancel asked of
	// another host of a cluster reaches the running one through this
	// record).
	CancelReason string          `json:"cancel_reason,omitempty"`
	NotBefore    time.Time       `json:"not_before,omitzero"`
	Created      time.Time       `json:"created"`
	Updated      time.Time       `json:"updated"`
	Error        *protocol.Error `json:"error,omitempty"`
	// Result is the accepted (verified) result, as contract JSON.
	Result []byte `json:"result,omitempty"`
}

// Resolution is how the operator ended a job's unknown state: its last
// attempt, unknown, stays as it is (it may have run); the job is either
// queued for one more attempt (ResolveRetry) or ends cancelled
// (ResolveCancel). Recorded once per attempt: the same resolution again
// is the same thing, another one a conflict.
type Resolution struct {
	Attempt uint32    `json:"attempt"`
	As      string    `json:"as"`
	Reason  string    `json:"reason,omitempty"`
	Time    time.Time `json:"time"`
}

// The ways an unknown job is resolved.
const (
	ResolveRetry  = "retry"
	ResolveCancel = "cancel"
)

// AttemptsAllowed is how many attempts the job may have prepared: its
// policy's, plus those a shutdown interrupted and those the operator
// granted.
func (j *Job) AttemptsAllowed() uint32 {
	return j.Retry.MaxAttempts + j.Interrupted + j.Granted
}

// Attempt is one try of a job, recorded before anything is dispatched.
// Its identity (job, number, host, boot, generation, creation) never
// changes; only its state moves forward along the lifecycle.
type Attempt struct {
	Job        string    `json:"job"`
	N          uint32    `json:"n"`
	Host       string    `json:"host,omitempty"` // the host that prepared it (several hosts: docs/cluster.md)
	Boot       string    `json:"boot"`
	Generation uint64    `json:"generation"` // placement generation (fencing)
	Created    time.Time `json:"created"`

	State           lifecycle.State `json:"state"`
	Started         time.Time       `json:"started,omitzero"`
	Ended           time.Time       `json:"ended,omitzero"`
	CancelRequested time.Time       `json:"cancel_requested,omitzero"`
	CancelAcked     time.Time       `json:"cancel_acked,omitzero"`
	Error           *protocol.Error `json:"error,omitempty"`
	// Produced is the worker's result (untrusted) as contract JSON.
	Produced []byte `json:"produced,omitempty"`
	// Artifact is the name and digest of the published artifact.
	Artifact       string `json:"artifact,omitempty"`
	ArtifactDigest string `json:"artifact_digest,omitempty"`
	// Verified is the node's own verification record (contract JSON).
	Verified []byte `json:"verified,omitempty"`
	// Telemetry is wall time, memory, kills: never authenticated.
	Telemetry Telemetry `json:"telemetry"`
}

// Telemetry of an attempt.
type Telemetry struct {
	WallTime time.Duration `json:"wall_time_ns,omitempty"`
	// CPUTime is the worker's CPU time (user and system) from its cgroup,
	// or from the reaped process where there are no cgroups.
	CPUTime    time.Duration `json:"cpu_time_ns,omitempty"`
	PeakMemory uint64        `json:"peak_memory_bytes,omitempty"`
	Killed     string        `json:"killed,omitempty"` // why the supervisor killed it: deadline, cancel, shutdown
	OOM        bool          `json:"oom,omitempty"`
}

// Event is one transition of a job or attempt, with time and reason.
type Event struct {
	Job     string    `json:"job"`
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Attempt uint32    `json:"attempt,omitempty"`
	// Host is the host that recorded the event, for an attempt's events.
	Host   string          `json:"host,omitempty"`
	From   lifecycle.State `json:"from,omitempty"`
	To     lifecycle.State `json:"to"`
	Reason string          `json:"reason"`
}

// SubmittedDigest is the digest resubmissions of the job are compared by.
func (j *Job) SubmittedDigest() string {
	if j.RequestDigest != "" {
		return j.RequestDigest
	}
	return j.SpecDigest
}

// Tombstone is what is left of a job removed by retention: enough to
// refuse its id for another payload and to say why the same payload is
// not run again.
type Tombstone struct {
	ID            string          `json:"id"`
	SpecDigest    string          `json:"spec_digest"`
	RequestDigest string          `json:"request_digest,omitempty"`
	State         lifecycle.State `json:"state"` // the state it had ended in
	Ended         time.Time       `json:"ended"`
	Removed       time.Time       `json:"removed"`
	// Restored: not a job retention removed, but one a store restored
	// from a backup forgot while its sandbox shows it ran (it may have
	// been accepted): no digest, state unknown, its id refused all the
	// same (RestoreTx.ForgetJob).
	Restored bool `json:"restored,omitempty"`
}

// SubmittedDigest is Job.SubmittedDigest of the removed job.
func (t *Tombstone) SubmittedDigest() string {
	if t.RequestDigest != "" {
		return t.RequestDigest
	}
	return t.SpecDigest
}

// Clone is a deep copy of the job record: a store's callers own and may
// change the records they get.
func (j *Job) Clone() *Job {
	c := *j
	c.Result = slices.Clone(j.Result)
	c.Retry.Retryable = slices.Clone(j.Retry.Retryable)
	c.Error = cloneError(j.Error)
	if j.Resolved != nil {
		r := *j.Resolved
		c.Resolved = &r
	}
	return &c
}

// Clone is a deep copy of the attempt record.
func (a *Attempt) Clone() *Attempt {
	c := *a
	c.Produced = slices.Clone(a.Produced)
	c.Verified = slices.Clone(a.Verified)
	c.Error = cloneError(a.Error)
	return &c
}

// cloneError copies a record's error (nil stays nil).
func cloneError(e *protocol.Error) *protocol.Error {
	if e == nil {
		return nil
	}
	c := *e
	return &c
}

// JobSummary is what a list of jobs shows of each: read from the job's
// record without the rest of it (Tx.ForEachSubmittedSummary), which is
// what makes a page of a long list cheap.
type JobSummary struct {
	ID        string          `json:"id"`
	Operation string          `json:"operation"`
	Program   string          `json:"program,omitempty"`
	Seq       uint64          `json:"seq"`
	State     lifecycle.State `json:"state"`
	Attempts  uint32          `json:"attempts"`
	Created   time.Time       `json:"created"`
	// Updated is the record's last write: a terminal job's end.
	Updated time.Time `json:"updated"`
	// ErrorCode is the code of the job's error ("": none).
	ErrorCode protocol.Code `json:"-"`
}

// jobSummaryRecord is the part of a job record a summary decodes.
type jobSummaryRecord struct {
	JobSummary
	Error *struct {
		Code protocol.Code `json:"code"`
	} `json:"error"`
}

// DecodeJobSummary reads a summary from a job record's JSON: the drivers'
// way of reading a list without decoding whole records.
func DecodeJobSummary(raw []byte) (*JobSummary, error) {
	var r jobSummaryRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if r.Error != nil {
		r.ErrorCode = r.Error.Code
	}
	return &r.JobSummary, nil
}

// SummaryOf is the summary of a job record.
func SummaryOf(j *Job) *JobSummary {
	s := &JobSummary{ID: j.ID, Operation: j.Operation, Program: j.Program, Seq: j.Seq, State: j.State, Attempts: j.Attempts,
		Created: j.Created, Updated: j.Updated}
	if j.Error != nil {
		s.ErrorCode = j.Error.Code
	}
	return s
}
