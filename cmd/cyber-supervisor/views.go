package main

import (
	"encoding/json"
	"os"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The JSON the CLI prints for jobs, attempts and events: every integer a
// decimal string (the envelope's rule), times RFC 3339 and omitted when
// unset, the accepted result and the node's records as JSON rather than
// the store's bytes.

type jobView struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	Operation   string `json:"operation"`
	Priority    int32  `json:"priority,string"`
	Attempts    uint32 `json:"attempts,string"`
	MaxAttempts uint32 `json:"max_attempts,string"`
	// AttemptsAllowed is max_attempts plus the attempts a shutdown
	// interrupted and those the operator granted (resolve --retry).
	AttemptsAllowed uint32          `json:"attempts_allowed,string"`
	Interrupted     uint32          `json:"interrupted_attempts,string"`
	Granted         uint32          `json:"granted_attempts,string"`
	Resolved        *resolutionView `json:"resolved,omitempty"`
	Accepted        uint32          `json:"accepted_attempt,string,omitempty"`
	CancelRequested bool            `json:"cancel_requested"`
	CancelReason    string          `json:"cancel_reason,omitempty"`
	SpecDigest      string          `json:"spec_digest"`
	Created         *time.Time      `json:"created,omitempty"`
	Updated         *time.Time      `json:"updated,omitempty"`
	NotBefore       *time.Time      `json:"not_before,omitempty"`
	Error           *protocol.Error `json:"error"`
	Result          json.RawMessage `json:"result"`
	// CertificatePath is the accepted certificate's absolute path
	// (prove jobs) when this home holds it. In a cluster another host's
	// home may: CertificateHost names it, and CertificateLocation is
	// MACHINE:PATH there when that host is registered (status).
	CertificatePath     string `json:"certificate_path,omitempty"`
	CertificateHost     string `json:"certificate_host,omitempty"`
	CertificateLocation string `json:"certificate_location,omitempty"`
}

// resolutionView is the operator's resolution of an unknown attempt.
type resolutionView struct {
	Attempt uint32    `json:"attempt,string"`
	As      string    `json:"as"`
	Reason  string    `json:"reason,omitempty"`
	Time    time.Time `json:"time"`
}

type attemptView struct {
	N               uint32          `json:"n,string"`
	State           string          `json:"state"`
	Host            string          `json:"host,omitempty"`
	Boot            string          `json:"boot"`
	Generation      uint64          `json:"generation,string"`
	Created         *time.Time      `json:"created,omitempty"`
	Started         *time.Time      `json:"started,omitempty"`
	Ended           *time.Time      `json:"ended,omitempty"`
	CancelRequested *time.Time      `json:"cancel_requested,omitempty"`
	CancelAcked     *time.Time      `json:"cancel_acked,omitempty"`
	Error           *protocol.Error `json:"error"`
	Artifact        string          `json:"artifact,omitempty"`
	ArtifactDigest  string          `json:"artifact_sha256,omitempty"`
	Verified        json.RawMessage `json:"verification,omitempty"`
	Telemetry       telemetryView   `json:"telemetry"`
}

type telemetryView struct {
	WallTimeMS uint64 `json:"wall_time_ms,string"`
	CPUTimeMS  uint64 `json:"cpu_time_ms,string"`
	PeakMemory uint64 `json:"peak_memory_bytes,string"`
	Killed     string `json:"killed,omitempty"`
	OOM        bool   `json:"oom_killed"`
}

type eventView struct {
	Seq     uint64    `json:"seq,string"`
	Time    time.Time `json:"time"`
	Attempt uint32    `json:"attempt,string,omitempty"`
	Host    string    `json:"host,omitempty"`
	From    string    `json:"from,omitempty"`
	To      string    `json:"to"`
	Reason  string    `json:"reason"`
}

type statusView struct {
	Job      jobView       `json:"job"`
	Attempts []attemptView `json:"attempts"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func rawOrNull(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return json.RawMessage("null")
	}
	return json.RawMessage(b)
}

// newJobView is a job as list shows it: a list has no attempts to tell
// which host holds an accepted certificate, so its path is given when
// this home holds the file (in a cluster, another host's may).
func newJobView(j *store.Job, home string) jobView {
	v := jobViewOf(j)
	if j.Accepted != 0 {
		if p := certificatePath(j.Result, home); p != "" {
			if _, err := os.Stat(p); err == nil {
				v.CertificatePath = p
			}
		}
	}
	return v
}

func jobViewOf(j *store.Job) jobView {
	v := jobView{
		ID: j.ID, State: string(j.State), Operation: j.Operation, Priority: j.Priority,
		Attempts: j.Attempts, MaxAttempts: j.Retry.MaxAttempts, AttemptsAllowed: j.AttemptsAllowed(),
		Interrupted: j.Interrupted, Granted: j.Granted, Accepted: j.Accepted,
		CancelRequested: j.CancelRequested, CancelReason: j.CancelReason, SpecDigest: j.SpecDigest,
		Created: timePtr(j.Created), Updated: timePtr(j.Updated), NotBefore: timePtr(j.NotBefore),
		Error: j.Error, Result: rawOrNull(j.Result),
	}
	if r := j.Resolved; r != nil {
		v.Resolved = &resolutionView{Attempt: r.Attempt, As: r.As, Reason: r.Reason, Time: r.Time}
	}
	return v
}

func newAttemptView(a *store.Attempt) attemptView {
	v := attemptView{
		N: a.N, State: string(a.State), Host: a.Host, Boot: a.Boot, Generation: a.Generation,
		Created: timePtr(a.Created), Started: timePtr(a.Started), Ended: timePtr(a.Ended),
		CancelRequested: timePtr(a.CancelRequested), CancelAcked: timePtr(a.CancelAcked),
		Error: a.Error, Artifact: a.Artifact, ArtifactDigest: a.ArtifactDigest,
		Telemetry: telemetryView{
			WallTimeMS: uint64(a.Telemetry.WallTime.Milliseconds()), CPUTimeMS: uint64(a.Telemetry.CPUTime.Milliseconds()),
			PeakMemory: a.Telemetry.PeakMemory, Killed: a.Telemetry.Killed, OOM: a.Telemetry.OOM,
		},
	}
	if len(a.Verified) > 0 && json.Valid(a.Verified) {
		v.Verified = a.Verified
	}
	return v
}

// newStatusView is a job's status: where its accepted certificate lies is
// the daemon's word (st.Certificate), this home's path only when this
// home holds it.
func newStatusView(st *supervisor.JobStatus, home string) statusView {
	v := statusView{Job: jobViewOf(st.Job), Attempts: make([]attemptView, 0, len(st.Attempts))}
	switch p := st.Certificate; {
	case p == nil && st.Job.Accepted != 0:
		v.Job.CertificatePath = certificatePath(st.Job.Result, home)
	case p != nil && p.Here:
		v.Job.CertificatePath, v.Job.CertificateHost = p.Path, p.Host
	case p != nil:
		v.Job.CertificateHost, v.Job.CertificateLocation = p.Host, p.Location
	}
	for _, a := range st.Attempts {
		v.Attempts = append(v.Attempts, newAttemptView(a))
	}
	return v
}

func newEventViews(ev []store.Event) []eventView {
	out := make([]eventView, 0, len(ev))
	for _, e := range ev {
		out = append(out, eventView{Seq: e.Seq, Time: e.Time, Attempt: e.Attempt, Host: e.Host, From: string(e.From), To: string(e.To), Reason: e.Reason})
	}
	return out
}
