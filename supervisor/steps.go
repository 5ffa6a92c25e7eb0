package supervisor

import (
	"context"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// An attempt's steps (running, produced, verified) are transitions of the
// attempt, mirrored on its job, each with its event. Produced and verified
// are kept with the attempt and recorded, in order and with their own
// times, in the transaction of its next write (its end, above all): no
// rule rests on them being durable earlier (a crash before the end makes
// a running attempt unknown as it would a produced one, and recovery reads
// neither the result nor the verification), and each was a commit of its
// own, on etcd a raft entry synced to disk. Running is the dispatch: a
// daemon records it on its own, with the placement generation and, on a
// cluster, its host registration compared, before the worker is given the
// job. A one-shot supervisor (Config.OneShot) keeps running too: it is
// the only writer of its home, and what is durable before dispatch is the
// job and its prepared attempt (a crash in between leaves the attempt
// queued in the store, which a restart makes unknown exactly as it would
// a running one); an attempt costs it two commits (prepared, ended), a
// daemon's three (prepared, running, ended) besides the submission.
// Status and Wait show the steps kept (stepOverlay); a client of another
// host on a shared store sees running, then the end.

// step is one transition kept for the next write. edit is given the
// step's own time: a kept step is applied later (at the attempt's next
// write, and at every read of its status meanwhile), so a time it
// records must be the step's, not that of the write or the read.
type step struct {
	to     lifecycle.State
	reason string
	at     time.Time
	edit   func(at *store.Attempt, when time.Time)
}

// transition moves the attempt (and mirrors the job's state), with an
// event: in a transaction of its own, or, one-shot, kept for the next one.
func (s *Supervisor) transition(ctx context.Context, a *active, to lifecycle.State, reason string, edit func(at *store.Attempt, when time.Time)) error {
	st := step{to: to, reason: reason, at: s.now(), edit: edit}
	if s.cfg.OneShot || to != lifecycle.Running {
		a.stepsMu.Lock()
		a.steps = append(a.steps, st)
		a.stepsMu.Unlock()
		s.changes.notifyState(a.job.ID, to)
		return nil
	}
	err := s.store.Update(ctx, func(tx store.Tx) error { return s.applyStep(tx, a, st) })
	if err != nil {
		// Whatever was or was not written: every waiter looks.
		s.changes.notify(a.job.ID)
		return err
	}
	// The job is in state to now (applyStep mirrors it).
	s.changes.notifyState(a.job.ID, to)
	return nil
}

func (s *Supervisor) applyStep(tx store.Tx, a *active, st step) error {
	at, err := tx.Attempt(a.job.ID, a.n)
	if err != nil {
		return err
	}
	from := at.State
	at.State = st.to
	if st.edit != nil {
		st.edit(at, st.at)
	}
	if err := tx.PutAttempt(at); err != nil {
		return err
	}
	job, err := tx.Job(a.job.ID)
	if err != nil {
		return err
	}
	job.State, job.Updated = st.to, st.at
	if err := tx.PutJob(job); err != nil {
		return err
	}
	return tx.AppendEvent(store.Event{Job: a.job.ID, Time: st.at, Attempt: a.n, Host: s.id.host, From: from, To: st.to, Reason: st.reason})
}

// updateAttempt runs fn in one transaction after the attempt's kept
// steps, and forgets the steps once it has committed. The steps are
// copied before the transaction: another write of the attempt (its end,
// a cancel) may record them meanwhile. One that found the attempt ended
// leaves them out, since the end recorded them with it, and writing them
// again would change an attempt of a job that has ended (the store
// refuses that, and a cancel racing the attempt's end failed with
// internal_error).
func (s *Supervisor) updateAttempt(ctx context.Context, a *active, fn func(store.Tx) error) error {
	a.stepsMu.Lock()
	steps := append([]step(nil), a.steps...)
	a.stepsMu.Unlock()
	var applied bool
	err := s.store.Update(ctx, func(tx store.Tx) error {
		applied = false
		if len(steps) > 0 {
			at, err := tx.Attempt(a.job.ID, a.n)
			if err != nil {
				return err
			}
			if !at.State.Terminal() {
				for _, st := range steps {
					if err := s.applyStep(tx, a, st); err != nil {
						return err
					}
				}
				applied = true
			}
		}
		return fn(tx)
	})
	if err == nil && applied {
		// Another write may have forgotten some of them already.
		a.stepsMu.Lock()
		a.steps = a.steps[min(len(steps), len(a.steps)):]
		a.stepsMu.Unlock()
	}
	return err
}

// stepOverlay shows an active attempt's kept steps in st (read from the
// store, which has not recorded them yet).
func (s *Supervisor) stepOverlay(st *JobStatus) {
	a := s.lookupActive(st.Job.ID)
	if a == nil {
		return
	}
	a.stepsMu.Lock()
	defer a.stepsMu.Unlock()
	if len(a.steps) == 0 {
		return
	}
	last := a.steps[len(a.steps)-1]
	if !st.Job.State.Terminal() {
		st.Job.State = last.to
	}
	for _, at := range st.Attempts {
		if at.N == a.n && !at.State.Terminal() {
			for _, k := range a.steps {
				at.State = k.to
				if k.edit != nil {
					k.edit(at, k.at)
				}
			}
		}
	}
}

// event records a note about an attempt without a state change. Notes
// are not worth waiting for space (the run loop calls this): a failed one
// is logged and dropped.
func (s *Supervisor) event(a *active, reason string) {
	err := s.updateAttempt(clientWrite(context.Background()), a, func(tx store.Tx) error {
		at, err := tx.Attempt(a.job.ID, a.n)
		if err != nil {
			return err
		}
		return tx.AppendEvent(store.Event{Job: a.job.ID, Time: s.now(), Attempt: a.n, Host: s.id.host, From: at.State, To: at.State, Reason: reason})
	})
	if err != nil {
		s.log.Warn("record event", "job", a.job.ID, "err", err)
	}
	s.changes.notify(a.job.ID)
}

func (s *Supervisor) recordAck(a *active) {
	// Called from the run loop, which must go on to the grace's kill: a
	// full disk costs the note, not the deadline.
	err := s.updateAttempt(clientWrite(context.Background()), a, func(tx store.Tx) error {
		at, err := tx.Attempt(a.job.ID, a.n)
		if err != nil {
			return err
		}
		at.CancelAcked = s.now()
		if err := tx.PutAttempt(at); err != nil {
			return err
		}
		return tx.AppendEvent(store.Event{Job: a.job.ID, Time: s.now(), Attempt: a.n, Host: s.id.host, From: at.State, To: at.State, Reason: "cancel acknowledged by the worker"})
	})
	if err != nil {
		s.log.Warn("record cancel acknowledgement", "job", a.job.ID, "err", err)
	}
	s.changes.notify(a.job.ID)
	a.acknowledged()
}
