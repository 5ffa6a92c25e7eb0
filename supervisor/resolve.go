package supervisor

import (
	"context"
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// A job whose last attempt became unknown (a crash, a lost host) ends
// unknown when its retry policy leaves it no attempt: nothing moves it
// again by itself, because that attempt may have run. Resolve is the
// operator's way out, with the care of the fencing layer's reconcile
// (docs/fencing.md): it names the attempt the operator looked at, is
// recorded once with the job (store.Resolution), and the same request
// again is the same thing while another one is a conflict. The unknown
// attempt itself never changes: an unknown attempt was never accepted
// (acceptance is a transaction of its own, which would have made it
// accepted), and the store refuses any move of a terminal attempt, so a
// late result of it can never be accepted, before or after the
// resolution. A retry gives the job one more attempt beyond its policy
// (store.Job.Granted); a cancel ends it cancelled, and retention may
// then remove it like any ended job.

// ResolveRequest is the operator's resolution of a job's unknown attempt.
type ResolveRequest struct {
	// Attempt is the job's unknown attempt the resolution is about: its
	// last one.
	Attempt uint32
	// As is store.ResolveRetry or store.ResolveCancel.
	As string
	// Reason is the operator's note (optional), kept with the resolution.
	Reason string
}

// ResolveStatus is what a resolution did.
type ResolveStatus struct {
	Job *store.Job `json:"job"`
	// Resolved: the resolution was recorded now; false when the same one
	// was recorded before (the request repeated).
	Resolved bool `json:"resolved"`
}

// Resolve resolves the job's unknown attempt as req says. It is refused
// with stale_state when the job is not unknown, when req names another
// attempt than its last (unknown) one, or when that attempt was resolved
// the other way.
func (s *Supervisor) Resolve(ctx context.Context, id string, req ResolveRequest) (ResolveStatus, error) {
	if req.As != store.ResolveRetry && req.As != store.ResolveCancel {
		return ResolveStatus{}, protocol.Errorf(protocol.CodeInvalidJob, "resolve as %s: want %s or %s", protocol.QuotePrefix(req.As), store.ResolveRetry, store.ResolveCancel)
	}
	if req.Attempt == 0 {
		return ResolveStatus{}, protocol.Errorf(protocol.CodeInvalidJob, "resolve: name the unknown attempt (1 or more)")
	}
	req.Reason = protocol.SafeMessage(req.Reason)
	var st ResolveStatus
	err := s.store.Update(clientWrite(ctx), func(tx store.Tx) error {
		st = ResolveStatus{}
		job, err := tx.Job(id)
		if err != nil {
			return unknownJob(tx, id, err)
		}
		st.Job = job
		if r := job.Resolved; r != nil && r.Attempt == req.Attempt {
			if r.As != req.As {
				return protocol.Errorf(protocol.CodeStaleState, "job %s: attempt %d was resolved with a %s already (%s)", id, r.Attempt, r.As, r.Time.Format("2006-01-02T15:04:05Z"))
			}
			return nil // the same resolution again
		}
		if job.State != lifecycle.Unknown {
			hint := ""
			if !job.State.Terminal() {
				hint = " (the attempt of a daemon that crashed becomes unknown when a daemon starts on its store)"
			}
			return protocol.Errorf(protocol.CodeStaleState, "job %s is %s: only a job that ended unknown is resolved%s", id, job.State, hint)
		}
		if req.Attempt != job.Attempts {
			return protocol.Errorf(protocol.CodeStaleState, "job %s: attempt %d is not its last attempt (%d)", id, req.Attempt, job.Attempts)
		}
		if err := s.applyResolution(tx, job, req); err != nil {
			return err
		}
		st.Resolved = true
		return nil
	})
	if err != nil {
		if errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrUnavailable) {
			return st, fmt.Errorf("%w: %w", ErrBusy, err)
		}
		return st, err
	}
	s.changes.notify(id)
	if st.Resolved {
		s.log.Info("job resolved by the operator", "job", id, "attempt", req.Attempt, "as", req.As)
		if st.Job.State == lifecycle.Queued {
			s.kick()
		} else {
			s.metrics.finished(lifecycle.Cancelled)
		}
	}
	return st, nil
}

// applyResolution records req on job, whose last attempt (req.Attempt)
// is unknown, inside tx: the job queued with one more attempt granted, or
// cancelled, and the event that says so.
func (s *Supervisor) applyResolution(tx store.Tx, job *store.Job, req ResolveRequest) error {
	at, err := tx.Attempt(job.ID, req.Attempt)
	if err != nil {
		return err
	}
	if at.State != lifecycle.Unknown {
		return protocol.Errorf(protocol.CodeStaleState, "job %s: attempt %d is %s, not unknown", job.ID, req.Attempt, at.State)
	}
	now := s.now()
	job.Resolved = &store.Resolution{Attempt: req.Attempt, As: req.As, Reason: req.Reason, Time: now}
	job.Updated = now
	note := ""
	if req.Reason != "" {
		note = ": " + req.Reason
	}
	var reason string
	switch req.As {
	case store.ResolveRetry:
		job.Granted++
		job.State, job.Error, job.NotBefore = lifecycle.Queued, nil, now
		reason = fmt.Sprintf("resolved by the operator: attempt %d's outcome stays unknown, one more attempt granted (attempt %d of %d)%s",
			req.Attempt, job.Attempts+1, job.AttemptsAllowed(), note)
	case store.ResolveCancel:
		job.State = lifecycle.Cancelled
		job.Error = protocol.Errorf(protocol.CodeCancelled, "ended by the operator with attempt %d's outcome unknown%s", req.Attempt, note)
		reason = fmt.Sprintf("resolved by the operator: cancelled, attempt %d's outcome stays unknown%s", req.Attempt, note)
	}
	if err := tx.PutJob(job); err != nil {
		return err
	}
	if job.State == lifecycle.Queued {
		if err := tx.Enqueue(job.ID, job.Priority, job.Seq); err != nil {
			return err
		}
	}
	return tx.AppendEvent(store.Event{Job: job.ID, Time: now, From: lifecycle.Unknown, To: job.State, Reason: reason})
}

// resolveHint is how a job that ended unknown says what ends it.
func resolveHint(id string, n uint32) string {
	return fmt.Sprintf("resolve it: `cyber-supervisor resolve %s --attempt %d --retry` gives it another attempt, `cyber-supervisor cancel %s` ends it", id, n, id)
}
