package api

import (
	"encoding/json"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// The conversions from the supervisor's and the store's records to the
// API's types (apitypes), one function per type. They are written out
// field by field on purpose: a record's field renamed or added in
// storage reaches the API only through a line here (convert_test.go
// holds what each conversion must give).

// JobOf is a job record as the API shows it. Where its certificate lies
// is not in the record: JobStatusOf adds it, and the CLI's list adds the
// path when its home holds the file.
func JobOf(j *store.Job) apitypes.Job {
	v := apitypes.Job{
		JobID: j.ID, State: j.State, Operation: j.Operation, Program: j.Program, Priority: j.Priority, Seq: j.Seq,
		Retry:    RetryPolicyOf(j.Retry),
		Attempts: j.Attempts, AttemptsAllowed: j.AttemptsAllowed(),
		InterruptedAttempts: j.Interrupted, GrantedAttempts: j.Granted,
		AcceptedAttempt: j.Accepted, CancelRequested: j.CancelRequested, CancelReason: j.CancelReason,
		SpecDigest: j.SpecDigest, Created: j.Created, Updated: j.Updated, NotBefore: j.NotBefore,
		Error: j.Error, Result: rawOrNull(j.Result),
	}
	if r := j.Resolved; r != nil {
		v.Resolved = &apitypes.Resolution{Attempt: r.Attempt, As: r.As, Reason: r.Reason, Time: r.Time}
	}
	return v
}

// RetryPolicyOf is a job's retry policy.
func RetryPolicyOf(p store.RetryPolicy) apitypes.RetryPolicy {
	return apitypes.RetryPolicy{MaxAttempts: p.MaxAttempts, BackoffNS: int64(p.Backoff), MaxBackoffNS: int64(p.MaxBackoff), Retryable: p.Retryable}
}

// AttemptOf is an attempt record as the API shows it.
func AttemptOf(a *store.Attempt) apitypes.Attempt {
	return apitypes.Attempt{
		JobID: a.Job, N: a.N, State: a.State, Host: a.Host, Boot: a.Boot, Generation: a.Generation,
		Created: a.Created, Started: a.Started, Ended: a.Ended,
		CancelRequested: a.CancelRequested, CancelAcked: a.CancelAcked, Error: a.Error,
		Produced: rawOrNil(a.Produced), Artifact: a.Artifact, ArtifactSHA256: a.ArtifactDigest,
		Verification: rawOrNil(a.Verified),
		Telemetry: apitypes.Telemetry{
			WallTimeMS: uint64(a.Telemetry.WallTime.Milliseconds()), CPUTimeMS: uint64(a.Telemetry.CPUTime.Milliseconds()),
			PeakMemoryBytes: a.Telemetry.PeakMemory, Killed: a.Telemetry.Killed, OOMKilled: a.Telemetry.OOM,
		},
	}
}

// ClaimOf is an attempt's claim.
func ClaimOf(c *store.JobClaim) apitypes.Claim {
	return apitypes.Claim{JobID: c.Job, Attempt: c.Attempt, Generation: c.Generation, Worker: c.Worker,
		Created: c.Created, Signature: c.Signature.String()}
}

// EventOf is one event.
func EventOf(e store.Event) apitypes.Event {
	return apitypes.Event{JobID: e.Job, Seq: e.Seq, Time: e.Time, Attempt: e.Attempt, Host: e.Host, From: e.From, To: e.To, Reason: e.Reason}
}

// EventsOf is a job's events ([] for none).
func EventsOf(ev []store.Event) []apitypes.Event {
	out := make([]apitypes.Event, 0, len(ev))
	for _, e := range ev {
		out = append(out, EventOf(e))
	}
	return out
}

// JobStatusOf is a job's status: the job with where its accepted
// certificate lies (the daemon's word: in a cluster, the accepted
// attempt's host holds it), its attempts and their claims.
func JobStatusOf(st *supervisor.JobStatus) apitypes.JobStatus {
	v := apitypes.JobStatus{Job: JobOf(st.Job), Attempts: make([]apitypes.Attempt, 0, len(st.Attempts)),
		Claims: make([]apitypes.Claim, 0, len(st.Claims))}
	if p := st.Certificate; p != nil {
		v.Job.CertificateHost, v.Job.CertificateInHome, v.Job.CertificateLocation = p.Host, p.InHome, p.Location
		if p.Here {
			v.Job.CertificatePath = p.Path
		}
	}
	for _, a := range st.Attempts {
		v.Attempts = append(v.Attempts, AttemptOf(a))
	}
	for _, c := range st.Claims {
		v.Claims = append(v.Claims, ClaimOf(c))
	}
	return v
}

// CancelReplyOf is what a cancel request did.
func CancelReplyOf(st supervisor.CancelStatus) apitypes.CancelReply {
	return apitypes.CancelReply{Job: JobOf(st.Job), Requested: st.Requested, Acknowledged: st.Acknowledged, AlreadyDone: st.AlreadyDone}
}

// ResolveReplyOf is what a resolution did.
func ResolveReplyOf(st *supervisor.ResolveStatus) apitypes.ResolveReply {
	return apitypes.ResolveReply{Job: JobOf(st.Job), Resolved: st.Resolved}
}

// GCReportOf is what a collection removed.
func GCReportOf(rep *supervisor.GCReport) apitypes.GCReport {
	v := apitypes.GCReport{EndedBefore: rep.Before, Removed: make([]apitypes.RemovedJob, 0, len(rep.Removed))}
	for _, r := range rep.Removed {
		v.Removed = append(v.Removed, apitypes.RemovedJob{JobID: r.ID, State: r.State, Ended: r.Ended})
	}
	return v
}

// DrainStatusOf is where a drain stands.
func DrainStatusOf(st supervisor.DrainStatus) apitypes.DrainStatus {
	running := st.Running
	if running == nil {
		running = []string{}
	}
	return apitypes.DrainStatus{Draining: st.Draining, Deadline: st.Deadline, Running: running, Done: st.Done}
}

// HostOf is one host boot of the cluster.
func HostOf(h supervisor.HostStatus) apitypes.Host {
	running := h.Running
	if running == nil {
		running = []string{}
	}
	return apitypes.Host{Host: h.Host, Boot: h.Boot, Generation: h.Generation, Slots: h.Slots, Started: h.Started,
		Home: h.Home, Running: running, Self: h.Self,
		LeaseTTLMS: uint64(h.LeaseTTL.Milliseconds()), LeaseLeftMS: uint64(h.LeaseLeft.Milliseconds())}
}

// HostsOf is the cluster's hosts ([] for none).
func HostsOf(hosts []supervisor.HostStatus) []apitypes.Host {
	out := make([]apitypes.Host, 0, len(hosts))
	for _, h := range hosts {
		out = append(out, HostOf(h))
	}
	return out
}

// LimitsOf is the operator's job limits.
func LimitsOf(l supervisor.LimitsReport) apitypes.Limits {
	return apitypes.Limits{DefaultMemoryBytes: l.DefaultMemoryBytes, DefaultWallTimeMS: l.DefaultWallTimeMS,
		MaxMemoryBytes: l.MaxMemoryBytes, MaxWallTimeMS: l.MaxWallTimeMS, MinMemoryBytes: l.MinMemoryBytes,
		MemoryEnforced: l.MemoryEnforced, DefaultRetries: l.DefaultRetries}
}

// CapabilitiesReplyOf is what GET /v1/capabilities answers.
func CapabilitiesReplyOf(c protocol.Capabilities, l supervisor.LimitsReport, h *launch.HostReport) (apitypes.CapabilitiesReply, error) {
	caps, err := json.Marshal(c)
	if err != nil {
		return apitypes.CapabilitiesReply{}, err
	}
	v := apitypes.CapabilitiesReply{Capabilities: caps, Limits: LimitsOf(l)}
	if h != nil {
		probe, err := json.Marshal(h.Probe)
		if err != nil {
			return apitypes.CapabilitiesReply{}, err
		}
		v.Host = &apitypes.HostReport{Isolation: h.Isolation, Probe: probe}
	}
	return v, nil
}

// CheckReportOf is what a store check found.
func CheckReportOf(r *bolt.CheckReport) apitypes.CheckReport {
	problems := r.Problems
	if problems == nil {
		problems = []string{}
	}
	return apitypes.CheckReport{
		File: r.File, Schema: r.Schema, PageSize: r.PageSize, Pages: r.Pages, Records: r.Records,
		Jobs: r.Jobs, Attempts: r.Attempts, Events: r.Events, Queued: r.Queued, Tombstones: r.Tombstones,
		FencingRecords: r.Fencing, Signatures: r.Signatures, UnauthenticatedRecords: r.Unauthenticated,
		Backup: BackupMarkOf(r.Backup), Fence: RestoreFenceOf(r.Fence), Problems: problems, Note: r.Note,
	}
}

// BackupMarkOf is a backup's mark, or nil.
func BackupMarkOf(b *store.BackupMark) *apitypes.BackupMark {
	if b == nil {
		return nil
	}
	return &apitypes.BackupMark{Taken: b.Taken, Boot: b.Boot, Boots: b.Boots}
}

// RestoreFenceOf is a restored store's last fence, or nil.
func RestoreFenceOf(f *store.RestoreFence) *apitypes.RestoreFence {
	if f == nil {
		return nil
	}
	return &apitypes.RestoreFence{At: f.At, Restores: f.Restores, Invocations: f.Invocations, Reason: f.Reason, Emitted: f.Emitted}
}

// rawOrNull is stored contract JSON as a JSON value: null when there is
// none (or it is not JSON, which the store's check reports).
func rawOrNull(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return json.RawMessage("null")
	}
	return json.RawMessage(b)
}

// rawOrNil is rawOrNull for a key left out when empty.
func rawOrNil(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return json.RawMessage(b)
}
