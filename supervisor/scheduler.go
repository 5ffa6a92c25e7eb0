package supervisor

import (
	"context"
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
			if err != nil && ctx.Err() == nil {
				s.log.Error("scheduler: prepare attempt", "err", err)
			}
			return next
		}
		s.runs.Add(1)
		go func() {
			defer func() {
				s.unregister(a)
				<-s.slotsSem
				s.runs.Done()
				s.kick()
			}()
			s.runAttempt(a)
		}()
	}
	return time.Time{}
}

// prepareNext records the next attempt of the first ready job, in one
// transaction: the attempt exists durably before anything is dispatched.
func (s *Supervisor) prepareNext(ctx context.Context) (*active, time.Time, error) {
	var (
		a    *active
		next time.Time
	)
	err := s.store.Update(ctx, func(tx store.Tx) error {
		ids, err := tx.Queued(256)
		if err != nil {
			return err
		}
		now := s.now()
		for _, id := range ids {
			job, err := tx.Job(id)
			if err != nil {
				return err
			}
			if job.NotBefore.After(now) {
				if next.IsZero() || job.NotBefore.Before(next) {
					next = job.NotBefore
				}
				continue
			}
			if err := tx.Dequeue(id); err != nil {
				return err
			}
			job.Attempts++
			job.Updated = now
			if err := tx.PutJob(job); err != nil {
				return err
			}
			gen, _, err := generation(tx)
			if err != nil {
				return err
			}
			at := &store.Attempt{Job: id, N: job.Attempts, Boot: s.boot, Generation: gen, Created: now, State: lifecycle.Queued}
			if err := tx.PutAttempt(at); err != nil {
				return err
			}
			if err := tx.AppendEvent(store.Event{Job: id, Time: now, Attempt: at.N, To: lifecycle.Queued, Reason: "attempt prepared"}); err != nil {
				return err
			}
			spec, err := tx.Spec(id)
			if err != nil {
				return err
			}
			a = newActive(job, spec, at.N)
			return nil
		}
		return nil
	})
	if err != nil {
		return nil, next, err
	}
	if a != nil {
		s.register(a)
	}
	return a, next, nil
}

func (s *Supervisor) register(a *active) {
	s.mu.Lock()
	s.active[a.job.ID] = a
	s.mu.Unlock()
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
