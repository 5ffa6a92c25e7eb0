package apitypes

import (
	"encoding/json"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// Job is an admitted job as the API and the CLI show it: GET /v1/jobs
// (a page is a JSON array of them), the job of a status, and the CLI's
// list.
type Job struct {
	JobID     string          `json:"job_id"`
	State     lifecycle.State `json:"state"`
	Operation string          `json:"operation"`
	// Program is the particle (hex) of the job's program; absent for a
	// job admitted before the store kept it.
	Program  string `json:"program,omitempty"`
	Priority int32  `json:"priority,string"`
	// Seq orders jobs first-in first-out: submission order.
	Seq   uint64      `json:"seq,string"`
	Retry RetryPolicy `json:"retry"`
	// Attempts is how many attempts were prepared; AttemptsAllowed is the
	// policy's max_attempts plus the attempts a shutdown interrupted
	// (InterruptedAttempts) and those the operator granted
	// (GrantedAttempts, resolve --retry).
	Attempts            uint32      `json:"attempts,string"`
	AttemptsAllowed     uint32      `json:"attempts_allowed,string"`
	InterruptedAttempts uint32      `json:"interrupted_attempts,string"`
	GrantedAttempts     uint32      `json:"granted_attempts,string"`
	Resolved            *Resolution `json:"resolved,omitempty"`
	// AcceptedAttempt is the accepted attempt's number (absent: none).
	AcceptedAttempt uint32 `json:"accepted_attempt,string,omitempty"`
	CancelRequested bool   `json:"cancel_requested"`
	CancelReason    string `json:"cancel_reason,omitempty"`
	// SpecDigest is the SHA-256 (hex) of the frozen job spec.
	SpecDigest string          `json:"spec_digest"`
	Created    time.Time       `json:"created"`
	Updated    time.Time       `json:"updated"`
	NotBefore  time.Time       `json:"not_before,omitzero"`
	Error      *protocol.Error `json:"error"`
	// Result is the accepted, verified result (contract JSON), or null.
	Result json.RawMessage `json:"result"`
	// Where the accepted certificate lies (prove jobs). CertificatePath
	// is its absolute path when the home of the daemon (or the CLI)
	// answering holds it. In a cluster another host's home may:
	// CertificateHost names that host, CertificateInHome is the path below
	// its home, and CertificateLocation is MACHINE:PATH there when that
	// host is registered now. A list fills CertificatePath only.
	CertificatePath     string `json:"certificate_path,omitempty"`
	CertificateHost     string `json:"certificate_host,omitempty"`
	CertificateInHome   string `json:"certificate_in_home,omitempty"`
	CertificateLocation string `json:"certificate_location,omitempty"`
}

// RetryPolicy says when a failed attempt is followed by another: the
// names of a submission's retry (docs/supervisor.md).
type RetryPolicy struct {
	MaxAttempts  uint32          `json:"max_attempts,string"`
	BackoffNS    int64           `json:"backoff_ns,string"`
	MaxBackoffNS int64           `json:"max_backoff_ns,string"`
	Retryable    []protocol.Code `json:"retryable"` // null: the codes' own defaults
}

// Resolution is the operator's resolution of a job's unknown attempt.
type Resolution struct {
	Attempt uint32    `json:"attempt,string"`
	As      string    `json:"as"` // retry or cancel
	Reason  string    `json:"reason,omitempty"`
	Time    time.Time `json:"time"`
}

// Attempt is one try of a job.
type Attempt struct {
	JobID           string          `json:"job_id"`
	N               uint32          `json:"n,string"`
	State           lifecycle.State `json:"state"`
	Host            string          `json:"host,omitempty"`
	Boot            string          `json:"boot"`
	Generation      uint64          `json:"generation,string"`
	Created         time.Time       `json:"created"`
	Started         time.Time       `json:"started,omitzero"`
	Ended           time.Time       `json:"ended,omitzero"`
	CancelRequested time.Time       `json:"cancel_requested,omitzero"`
	CancelAcked     time.Time       `json:"cancel_acked,omitzero"`
	Error           *protocol.Error `json:"error"`
	// Produced is the worker's own, unverified result (contract JSON).
	Produced json.RawMessage `json:"produced,omitempty"`
	// Artifact is the published artifact's name in the attempt's
	// sandbox, ArtifactSHA256 its digest.
	Artifact       string `json:"artifact,omitempty"`
	ArtifactSHA256 string `json:"artifact_sha256,omitempty"`
	// Verification is the supervisor's own verification record.
	Verification json.RawMessage `json:"verification,omitempty"`
	Telemetry    Telemetry       `json:"telemetry"`
}

// Telemetry is what an attempt cost; never authenticated.
type Telemetry struct {
	WallTimeMS      uint64 `json:"wall_time_ms,string"`
	CPUTimeMS       uint64 `json:"cpu_time_ms,string"`
	PeakMemoryBytes uint64 `json:"peak_memory_bytes,string"`
	// Killed says why the supervisor killed the worker: deadline,
	// cancel, shutdown.
	Killed    string `json:"killed,omitempty"`
	OOMKilled bool   `json:"oom_killed"`
}

// Claim is the claim an attempt made before its worker was given the
// job: signed by the neuron's key when one is set.
type Claim struct {
	JobID      string                    `json:"job_id"`
	Attempt    uint32                    `json:"attempt,string"`
	Generation uint64                    `json:"generation,string"`
	Worker     protocol.WorkerDescriptor `json:"worker"`
	Created    time.Time                 `json:"created"`
	Signature  string                    `json:"signature,omitempty"` // hex
}

// JobStatus is GET /v1/jobs/{id} (and /wait): the job, its attempts in
// order and their claims; the CLI's status prints it.
type JobStatus struct {
	Job      Job       `json:"job"`
	Attempts []Attempt `json:"attempts"`
	Claims   []Claim   `json:"claims"`
}

// Event is one transition of a job or of one of its attempts.
type Event struct {
	JobID   string          `json:"job_id"`
	Seq     uint64          `json:"seq,string"`
	Time    time.Time       `json:"time"`
	Attempt uint32          `json:"attempt,string,omitempty"`
	Host    string          `json:"host,omitempty"` // the host that recorded it
	From    lifecycle.State `json:"from,omitempty"`
	To      lifecycle.State `json:"to"`
	Reason  string          `json:"reason"`
}
