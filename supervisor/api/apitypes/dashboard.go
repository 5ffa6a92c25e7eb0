package apitypes

import (
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// The operator's dashboard reads two things besides a job's status: the
// overview of the whole store (GET /v1/overview) and pages of job
// summaries, filtered, walked with a cursor (GET /v1/jobs with any of
// JobQuery's parameters). docs/dashboard-data.md says what each figure
// means and how the daemon keeps it without a scan per request.

// Overview is GET /v1/overview: what the daemon knows of every job, kept
// as jobs move (counts and series are not counted per request).
type Overview struct {
	// Time is when the figures were read.
	Time time.Time `json:"time"`
	// Jobs counts the store's jobs in each state, every state listed in
	// the lifecycle's order (zero counts included); TotalJobs is their sum.
	Jobs      []StateCount `json:"jobs"`
	TotalJobs uint64       `json:"total_jobs,string"`
	// CountedSince is when the counts were last taken from a full scan of
	// the store (the daemon's start, or on a shared store the last
	// refresh); since then they follow the writes.
	CountedSince time.Time `json:"counted_since"`
	// LastHour has 60 one-minute buckets, LastDay 24 one-hour buckets,
	// the oldest first, the last one the bucket now is in.
	LastHour Series `json:"last_hour"`
	LastDay  Series `json:"last_day"`
	// QueueDepth is how many jobs wait in the ready queue (a job waiting
	// out a retry's backoff included); OldestQueued is the submission
	// time of the oldest job in state queued (absent: none).
	QueueDepth   uint64    `json:"queue_depth,string"`
	OldestQueued time.Time `json:"oldest_queued,omitzero"`
	// Latency is over the most recent jobs and attempts (Latencies).
	Latency Latencies `json:"latency"`
	// SlotsInUse is how many attempts this daemon runs now, of Slots.
	SlotsInUse uint64 `json:"slots_in_use,string"`
	Slots      uint64 `json:"slots,string"`
	// The daemon: its build, host, boot and when it started; its store
	// (bbolt or etcd).
	Version string    `json:"version"`
	Host    string    `json:"host"`
	Boot    string    `json:"boot"`
	Started time.Time `json:"started"`
	Store   string    `json:"store"`
	// Isolation is the launcher's mode (isolated, unisolated); CgroupMode
	// the host's cgroups (v2, hybrid, v1, none) as its probe found them.
	Isolation  string `json:"isolation,omitempty"`
	CgroupMode string `json:"cgroup_mode,omitempty"`
	// Enforced names the limits this host enforces (the capabilities'
	// limits that are true: reductions, wall_time, memory,
	// artifact_bytes, cancellation, pids, cpu), in that order.
	Enforced []string `json:"enforced"`
}

// StateCount is how many jobs are in one state.
type StateCount struct {
	State lifecycle.State `json:"state"`
	Jobs  uint64          `json:"jobs,string"`
}

// Series is a run of equal time buckets: Start is the first bucket's
// start, each bucket Step long. Accepted counts the jobs accepted in each
// bucket (throughput); Failures the jobs that ended without a result
// (failed, rejected, or unknown), one row per error code, the codes with
// the most failures first (a job without an error code counts under
// internal_error).
type Series struct {
	Start       time.Time    `json:"start"`
	StepSeconds uint64       `json:"step_seconds,string"`
	Accepted    U64s         `json:"accepted"`
	Failures    []CodeSeries `json:"failures"`
}

// CodeSeries is the failures with one error code, per bucket, and their
// sum over the series.
type CodeSeries struct {
	Code   protocol.Code `json:"code"`
	Counts U64s          `json:"counts"`
	Total  uint64        `json:"total,string"`
}

// Latencies are percentiles over a window of the most recent samples:
// Admission is a job's submission to its acceptance, Run an attempt's
// start to its produced result, Verify its produced result to its
// verification. Each is over at most WindowSamples samples of the last
// WindowSeconds.
type Latencies struct {
	WindowSeconds uint64  `json:"window_seconds,string"`
	WindowSamples uint64  `json:"window_samples,string"`
	Admission     Latency `json:"admission"`
	Run           Latency `json:"run"`
	Verify        Latency `json:"verify"`
}

// Latency is the p50 and p95 of Samples durations, in milliseconds (all
// zero when there are no samples).
type Latency struct {
	Samples uint64 `json:"samples,string"`
	P50MS   uint64 `json:"p50_ms,string"`
	P95MS   uint64 `json:"p95_ms,string"`
}

// JobQuery is a filtered page of jobs: the parameters of GET /v1/jobs
// that ask for a JobPage (the route answers its older form, a JSON array
// of jobs, when none of op, code, program, since, until, cursor is
// given). Every filter is optional and they combine with "and". Jobs come
// newest first (submission order).
type JobQuery struct {
	State     lifecycle.State `json:"state,omitempty"`
	Operation string          `json:"op,omitempty"`
	Code      protocol.Code   `json:"code,omitempty"`
	// Program is the program's identity: its particle, 64 hex digits.
	Program string `json:"program,omitempty"`
	// Since and Until bound the submission time: Since ≤ created < Until.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// Cursor is a page's Next, to go on from it ("": the newest job). It
	// is opaque; a damaged one is invalid_cursor.
	Cursor string `json:"cursor,omitempty"`
	// Limit is the most jobs a page holds (1..1000, default 100).
	Limit int `json:"limit,omitempty"`
}

// JobPage is one page of a JobQuery. A page walks a bounded number of
// jobs (Scanned): when a filter matches rarely, a page may hold fewer
// than the limit, even none, with Next to go on. Next is "" at the end.
type JobPage struct {
	Jobs    []JobSummary `json:"jobs"`
	Next    string       `json:"next"`
	Scanned uint64       `json:"scanned,string"`
}

// JobSummary is a job in a list: what a row of the jobs page shows.
type JobSummary struct {
	JobID     string          `json:"job_id"`
	State     lifecycle.State `json:"state"`
	Operation string          `json:"operation"`
	// Program is the program's particle (hex); absent for a job admitted
	// before the store kept it.
	Program   string        `json:"program,omitempty"`
	ErrorCode protocol.Code `json:"error_code,omitempty"`
	Submitted time.Time     `json:"submitted"`
	// Ended is when the job reached its terminal state (absent: it has
	// not).
	Ended    time.Time `json:"ended,omitzero"`
	Attempts uint32    `json:"attempts,string"`
}

// JobLookup is GET /v1/lookup/{prefix}: the one job whose id starts with
// the prefix (unknown_job: none; ambiguous_job: more than one).
type JobLookup struct {
	JobID string `json:"job_id"`
}
