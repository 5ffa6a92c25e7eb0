package supervisor

import (
	"context"
	"errors"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// CancelStatus reports what a cancel request did.
type CancelStatus struct {
	Job          *store.Job `json:"job"`
	Requested    bool       `json:"requested"`    // a cancel was recorded now
	Acknowledged bool       `json:"acknowledged"` // the worker acknowledged within AckWait
	AlreadyDone  bool       `json:"already_done"` // the job had ended before
}

// Cancel asks for a job's cancellation. A queued job is cancelled at once.
// A running attempt gets the protocol: the request is recorded, the worker
// is told and acknowledges (recorded), and if it has not finished within
// the completion deadline its cgroup is killed; the job ends cancelled and
// nothing it wrote is published. Cancel waits for the acknowledgement at
// most AckWait; the rest happens in the background.
func (s *Supervisor) Cancel(ctx context.Context, id, reason string) (CancelStatus, error) {
	// The reason is caller text that ends up in events, the job's error
	// and the worker's cancel message: one bounded, printable line.
	reason = protocol.SafeMessage(cancelReason(reason))
	var st CancelStatus
	var running bool
	update := s.store.Update
	if a := s.lookupActive(id); a != nil {
		// The attempt's kept steps go first (one-shot, steps.go).
		update = func(ctx context.Context, fn func(store.Tx) error) error { return s.updateAttempt(ctx, a, fn) }
	}
	err := update(clientWrite(ctx), func(tx store.Tx) error {
		st, running = CancelStatus{}, false
		job, err := tx.Job(id)
		if err != nil {
			return unknownJob(tx, id, err)
		}
		st.Job = job
		if job.State == lifecycle.Unknown && job.Attempts > 0 {
			// Nothing runs: the operator ends the job whose last attempt
			// may have run (resolve.go); that attempt stays unknown.
			st.Requested = true
			return s.applyResolution(tx, job, ResolveRequest{Attempt: job.Attempts, As: store.ResolveCancel, Reason: reason})
		}
		if job.State.Terminal() {
			st.AlreadyDone = true
			return nil
		}
		now := s.now()
		st.Requested = true
		if !job.CancelRequested {
			job.CancelReason = reason
		}
		job.CancelRequested, job.Updated = true, now
		// A prepared attempt may be about to run, here or on another host
		// of a cluster: the store says so, not only this boot's memory.
		prepared := false
		if job.Attempts > 0 {
			at, err := tx.Attempt(id, job.Attempts)
			switch {
			case err == nil:
				prepared = !at.State.Terminal()
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
		}
		if job.State == lifecycle.Queued && !prepared && s.lookupActive(id) == nil {
			// Not running: nothing to stop.
			if err := tx.Dequeue(id); err != nil {
				return err
			}
			job.State = lifecycle.Cancelled
			job.Error = protocol.Errorf(protocol.CodeCancelled, "%s", reason)
			if err := tx.PutJob(job); err != nil {
				return err
			}
			return tx.AppendEvent(store.Event{Job: id, Time: now, From: lifecycle.Queued, To: lifecycle.Cancelled, Reason: "cancelled: " + reason})
		}
		running = true
		if err := tx.PutJob(job); err != nil {
			return err
		}
		if at, err := tx.Attempt(id, job.Attempts); err == nil && !at.State.Terminal() {
			at.CancelRequested = now
			if err := tx.PutAttempt(at); err != nil {
				return err
			}
		}
		return tx.AppendEvent(store.Event{Job: id, Time: now, Attempt: job.Attempts, From: job.State, To: job.State, Reason: "cancel requested: " + reason})
	})
	if err != nil {
		return st, err
	}
	s.changes.notify(id)
	if !running {
		if st.Requested {
			s.frozen.ended(id)
			s.metrics.finished(lifecycle.Cancelled)
		}
		return st, nil
	}
	a := s.lookupActive(id)
	if a == nil {
		return st, nil
	}
	a.requestCancel(reason, false)
	t := time.NewTimer(s.cfg.AckWait)
	defer t.Stop()
	select {
	case <-a.ackCh:
		st.Acknowledged = true
	case <-t.C:
	case <-ctx.Done():
	}
	return st, nil
}
