package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// JobStatus is a job with its attempts.
type JobStatus struct {
	Job      *store.Job       `json:"job"`
	Attempts []*store.Attempt `json:"attempts"`
	// Claims are the attempts' claims (made before each worker was given
	// the job), in attempt order; an attempt without one never reached
	// its worker, or was made before claims existed.
	Claims []*store.JobClaim `json:"claims"`
	// Certificate is where the accepted certificate lies (prove jobs):
	// on which host, and its path there (certplace.go).
	Certificate *CertificatePlace `json:"certificate,omitempty"`
}

// Status of one job.
func (s *Supervisor) Status(ctx context.Context, id string) (*JobStatus, error) {
	var st JobStatus
	err := s.view(ctx, "status of job "+protocol.QuotePrefix(id), func(tx store.Tx) error {
		job, err := tx.Job(id)
		if err != nil {
			return unknownJob(tx, id, err)
		}
		st.Job = job
		if st.Attempts, err = tx.Attempts(id); err != nil {
			return err
		}
		st.Claims = []*store.JobClaim{}
		for _, a := range st.Attempts {
			c, err := tx.JobClaim(id, a.N)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			st.Claims = append(st.Claims, c)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.stepOverlay(&st)
	st.Certificate = s.certificatePlace(ctx, &st)
	return &st, nil
}

// unknownJob is the answer for an id the store has no job under, saying
// so when retention removed it (its tombstone); another failure to read
// the job is the store's and is returned as is. The id is caller text:
// only a short prefix of it is echoed.
func unknownJob(tx store.Tx, id string, err error) error {
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if ts, terr := tx.Tombstone(id); terr == nil && ts.Restored {
		return fmt.Errorf("%w: %s: forgotten when the store was restored from a backup on %s; its sandbox shows it ran, and its id is never used again", ErrUnknownJob,
			protocol.QuotePrefix(id), ts.Removed.UTC().Format(time.RFC3339))
	} else if terr == nil {
		return fmt.Errorf("%w: %s: removed by retention at %s (it had ended %s at %s); its id is never used again", ErrUnknownJob,
			protocol.QuotePrefix(id), ts.Removed.UTC().Format(time.RFC3339), ts.State, ts.Ended.UTC().Format(time.RFC3339))
	}
	return fmt.Errorf("%w: %s", ErrUnknownJob, protocol.QuotePrefix(id))
}

// List jobs in submission order, optionally only those in one state;
// limit > 0 keeps the limit most recently submitted of them (still in
// submission order).
func (s *Supervisor) List(ctx context.Context, state lifecycle.State, limit int) ([]*store.Job, error) {
	var out []*store.Job
	err := s.view(ctx, "list jobs", func(tx store.Tx) error {
		return tx.ForEachSubmitted(limit > 0, func(j *store.Job) bool {
			if state == "" || j.State == state {
				out = append(out, j)
			}
			return limit <= 0 || len(out) < limit
		})
	})
	if limit > 0 {
		slices.Reverse(out)
	}
	return out, err
}

// Events of one job, in order.
func (s *Supervisor) Events(ctx context.Context, id string) ([]store.Event, error) {
	out, _, err := s.eventsAfter(ctx, id, 0)
	return out, err
}

// eventsAfter is the job's events with a seq above after, and whether the
// job has ended, read in one transaction.
func (s *Supervisor) eventsAfter(ctx context.Context, id string, after uint64) ([]store.Event, bool, error) {
	var (
		out   []store.Event
		ended bool
	)
	err := s.view(ctx, "events of job "+protocol.QuotePrefix(id), func(tx store.Tx) error {
		j, err := tx.Job(id)
		if err != nil {
			return unknownJob(tx, id, err)
		}
		ended = j.State.Terminal()
		all, err := tx.Events(id)
		for _, e := range all {
			if e.Seq > after {
				out = append(out, e)
			}
		}
		return err
	})
	return out, ended, err
}

// WaitEvents blocks until the job has events with a seq above after, or
// has ended, or ctx ends, and returns those events (none at the end of
// ctx) and whether the job has ended: a follower calls it in a loop with
// the last seq it saw.
func (s *Supervisor) WaitEvents(ctx context.Context, id string, after uint64) ([]store.Event, bool, error) {
	for {
		ch := s.changes.watch(id)
		ev, ended, err := s.eventsAfter(ctx, id, after)
		if err != nil || len(ev) > 0 || ended {
			return ev, ended, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// EventsAfter is the job's events with a seq above after.
func (s *Supervisor) EventsAfter(ctx context.Context, id string, after uint64) ([]store.Event, error) {
	out, _, err := s.eventsAfter(ctx, id, after)
	return out, err
}

// Jobs visits jobs in id order, from the first id above after ("": from
// the start), only those in state unless it is "", until fn returns false.
// It is List for callers that bound what they collect. A page begins
// with a seek to after, not a walk from the first id.
func (s *Supervisor) Jobs(ctx context.Context, state lifecycle.State, after string, fn func(*store.Job) bool) error {
	return s.view(ctx, "list jobs", func(tx store.Tx) error {
		return tx.ForEachJobFrom(after, func(j *store.Job) bool {
			if j.ID <= after || state != "" && j.State != state {
				return true
			}
			return fn(j)
		})
	})
}
