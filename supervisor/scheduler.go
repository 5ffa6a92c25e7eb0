package supervisor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// schedule dispatches ready jobs into free slots until ctx ends. It wakes
// on submissions, freed slots and retry backoffs.
func (s *Supervisor) schedule(ctx context.Context) {
	defer close(s.stopped)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := s.dispatchReady(ctx)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// dispatchReady fills free slots and returns when the earliest job held
// back by a retry backoff becomes ready (zero: none).
func (s *Supervisor) dispatchReady(ctx context.Context) time.Time {
	for ctx.Err() == nil {
		select {
		case s.slotsSem <- struct{}{}:
		default:
			return time.Time{} // all slots busy; a finishing attempt kicks us
		}
		a, next, err := s.prepareNext(ctx)
		if err != nil || a == nil {
			<-s.slotsSem
			if err != nil && ctx.Err() == nil && !errors.Is(err, store.ErrFenced) {
				s.log.Error("scheduler: prepare attempt", "err", err)
			}
			return next
		}
		s.dispatch(a)
	}
	return time.Time{}
}

// errNothingReady rolls back a scheduling pass that found no ready job.
var errNothingReady = errors.New("no job is ready")

// prepareNext records the next attempt of the first ready job, in one
// transaction: the attempt exists durably before anything is dispatched.
// On a shared store that transaction also compares this boot's
// registration, so two hosts never prepare the same attempt and a host
// that lost its registration prepares none.
func (s *Supervisor) prepareNext(ctx context.Context) (*active, time.Time, error) {
	var (
		a    *active
		next time.Time
	)
	if s.fenced() {
		return nil, next, nil
	}
	// A one-shot supervisor dispatches only what was submitted to it: the
	// jobs a daemon left queued in the home wait for a daemon (a run that
	// took one would hold its user until it ended, and interrupt it at
	// exit, costing the job an attempt).
	var own map[string]bool
	if s.cfg.OneShot {
		s.mu.Lock()
		own = maps.Clone(s.own)
		s.mu.Unlock()
		if len(own) == 0 {
			return nil, next, nil
		}
	}
	var id identity
	invoked := time.Now()
	err := s.store.Update(ctx, func(tx store.Tx) error {
		// The closure may run more than once (a conflict on a shared
		// store): what it hands out is only that of the run committed.
		a, next, id = nil, time.Time{}, s.txIdent(tx)
		now := s.now()
		var (
			job     *store.Job
			visited int
			err     error
		)
		// The first job ready to run (not held back by a retry backoff),
		// at most 256 deep.
		if ferr := tx.ForEachQueued(func(qid string) bool {
			if own != nil && !own[qid] {
				return true // however deep its own job is
			}
			visited++
			var j *store.Job
			if j, err = tx.Job(qid); err != nil {
				return false
			}
			if j.NotBefore.After(now) {
				if next.IsZero() || j.NotBefore.Before(next) {
					next = j.NotBefore
				}
				return visited < 256
			}
			job = j
			return false
		}); ferr != nil {
			return ferr
		}
		if err != nil {
			return err
		}
		if job == nil {
			// Nothing ready: roll back rather than commit a transaction
			// that wrote nothing (a commit syncs the file all the same).
			return errNothingReady
		}
		a, err = s.prepareJob(tx, job, now, id, nil)
		return err
	})
	if errors.Is(err, errNothingReady) {
		return nil, next, nil
	}
	if err != nil {
		return nil, next, err
	}
	if a != nil {
		s.history("claim", a.job.ID, a.n, id, invoked)
		if s.hooks.afterTake != nil {
			s.hooks.afterTake(time.Since(invoked))
		}
		s.register(a)
	}
	return a, next, nil
}

// prepareJob records the next attempt of job (dequeued, numbered,
// queued, with its event) inside tx and returns it, ready to dispatch.
// spec is the job's frozen spec when the caller has it (Submit, in the
// transaction that stores it); nil takes it from the frozen specs, or
// reads it from the store: a copy, and the store's file pages mapped in.
func (s *Supervisor) prepareJob(tx store.Tx, job *store.Job, now time.Time, id identity, spec []byte) (*active, error) {
	if err := tx.Dequeue(job.ID); err != nil {
		return nil, err
	}
	job.Attempts++
	job.Updated = now
	if err := tx.PutJob(job); err != nil {
		return nil, err
	}
	gen, network, err := s.placement(tx)
	if err != nil {
		return nil, err
	}
	at := &store.Attempt{Job: job.ID, N: job.Attempts, Host: id.host, Boot: id.boot, Generation: gen, Created: now, State: lifecycle.Queued}
	if err := tx.PutAttempt(at); err != nil {
		return nil, err
	}
	// The attempt's claim, in the same transaction: durable before its
	// worker is given the job (the launch checks that the generation is
	// still current before it does).
	claim, err := s.jobClaim(job, at, network, now)
	if err != nil {
		return nil, err
	}
	if err := tx.RecordJobClaim(claim); err != nil {
		return nil, err
	}
	if err := tx.AppendEvent(store.Event{Job: job.ID, Time: now, Attempt: at.N, Host: id.host, To: lifecycle.Queued,
		Reason: fmt.Sprintf("attempt prepared at generation %d, claimed", gen)}); err != nil {
		return nil, err
	}
	if spec == nil {
		spec = s.frozen.canonical(job.ID, job.SpecDigest)
	}
	if spec == nil {
		if spec, err = tx.Spec(job.ID); err != nil {
			return nil, err
		}
	}
	a := newActive(job, spec, at.N)
	a.gen = gen
	return a, nil
}

// dispatch runs a prepared, registered attempt that holds a slot token.
func (s *Supervisor) dispatch(a *active) {
	s.runs.Add(1)
	go func() {
		defer func() {
			s.unregister(a)
			close(a.finished)
			<-s.slotsSem
			s.runs.Done()
			s.kick()
		}()
		s.runAttempt(a)
		// The attempt's copies of a large spec die with it (the spec is
		// the frozen specs' while the job may run again).
		size := len(a.spec)
		a.spec = nil
		collectLarge(size)
	}()
}

// register makes a prepared attempt known as running. One registered once
// Close has taken its list (a one-shot Submit racing Close) is
// interrupted at once, as Close interrupts the others.
func (s *Supervisor) register(a *active) {
	s.mu.Lock()
	s.active[a.job.ID] = a
	closing := s.closing
	s.mu.Unlock()
	if closing {
		a.requestCancel(shutdownReason, true)
	}
}

// activeAttempts lists the attempts registered now.
func (s *Supervisor) activeAttempts() []*active {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*active, 0, len(s.active))
	for _, a := range s.active {
		out = append(out, a)
	}
	return out
}

func (s *Supervisor) unregister(a *active) {
	s.mu.Lock()
	if s.active[a.job.ID] == a {
		delete(s.active, a.job.ID)
	}
	s.mu.Unlock()
}

func (s *Supervisor) lookupActive(job string) *active {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active[job]
}

// backoff before attempt n+1 (n ≥ 1 attempts done).
func backoff(p store.RetryPolicy, n uint32) time.Duration {
	if p.Backoff <= 0 {
		return 0
	}
	d := p.Backoff
	for i := uint32(1); i < n && d < MaxBackoff; i++ {
		d *= 2
	}
	limit := p.MaxBackoff
	if limit <= 0 {
		limit = MaxBackoff
	}
	return min(d, limit)
}
