package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// GCRequest says which ended jobs retention removes.
type GCRequest struct {
	// OlderThan: only jobs that ended at least this long ago (0: any
	// ended job).
	OlderThan time.Duration
	// State: only jobs that ended in this state ("": accepted, rejected,
	// failed or cancelled). Live jobs and unknown ones are never removed.
	State lifecycle.State
}

// RemovedJob is one job retention removed; its tombstone stays.
type RemovedJob struct {
	ID    string          `json:"id"`
	State lifecycle.State `json:"state"`
	Ended time.Time       `json:"ended"`
}

// GCReport is what one collection removed.
type GCReport struct {
	Removed []RemovedJob `json:"removed"`
	// Before is the cutoff: jobs that ended before it were candidates.
	Before time.Time `json:"before"`
}

// gcBatch bounds the jobs one transaction removes: a large collection is
// many short transactions, never one that holds the store for long. A
// transaction on etcd takes at most 128 writes (a removal is about a
// dozen).
const (
	gcBatch        = 256
	gcClusterBatch = 8
)

// GC removes ended jobs past the retention: first their records (each
// batch in one transaction that leaves the tombstones, so an old id can
// never be reused for another payload or accepted again), then their
// sandboxes (a crash in between leaves sandboxes without a job, which the
// next start removes), then the stored certificates no remaining job names
// (certgc.go). A job running in this boot, a live job and an
// unknown one are never removed. Collections in one supervisor run one
// at a time: two that listed the same jobs would otherwise both try to
// remove them, and the second's batch would fail on the first's removal.
func (s *Supervisor) GC(ctx context.Context, req GCRequest) (*GCReport, error) {
	if req.State != "" && (!req.State.Terminal() || req.State == lifecycle.Unknown) {
		return nil, fmt.Errorf("%w: gc state %q: only accepted, rejected, failed or cancelled jobs are removed", ErrConfig, req.State)
	}
	select {
	case s.gcTurn <- struct{}{}:
		defer func() { <-s.gcTurn }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rep := &GCReport{Removed: []RemovedJob{}, Before: s.now().Add(-req.OlderThan)}
	var candidates []RemovedJob
	// refs: the stored certificates the candidates name, removed after
	// them when no remaining job names them (certgc.go).
	var refs map[string]bool
	err := s.view(ctx, "the jobs to collect", func(tx store.Tx) error {
		ops := map[string]string{}
		err := tx.ForEachSubmitted(false, func(j *store.Job) bool {
			if removable(j, req.State, rep.Before) && s.lookupActive(j.ID) == nil {
				candidates = append(candidates, RemovedJob{ID: j.ID, State: j.State, Ended: j.Updated})
				ops[j.ID] = j.Operation
			}
			return true
		})
		if err != nil {
			return err
		}
		refs, err = refsOf(tx, candidates, ops)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("gc: list jobs: %w", err)
	}
	if req.State == "" {
		cutoff := rep.Before
		if grace := s.now().Add(-certificateGrace); grace.Before(cutoff) {
			cutoff = grace
		}
		if err := s.addUnnamedCandidates(refs, cutoff); err != nil {
			return nil, fmt.Errorf("gc: %w", err)
		}
	}
	defer func() {
		if err := s.collectCertificates(ctx, refs); err != nil {
			s.log.Warn("gc: remove stored certificates", "err", err)
		}
	}()
	size := gcBatch
	if s.cluster != nil {
		size = gcClusterBatch
	}
	for len(candidates) > 0 {
		batch := candidates[:min(size, len(candidates))]
		candidates = candidates[len(batch):]
		now := s.now()
		var done, elsewhere []RemovedJob
		err := s.store.Update(ctx, func(tx store.Tx) error {
			done, elsewhere = done[:0], elsewhere[:0]
			for _, c := range batch {
				if _, err := tx.RemoveJob(c.ID, now); err != nil {
					if s.cluster != nil && errors.Is(err, store.ErrNotFound) {
						// Another host of the cluster removed it first.
						elsewhere = append(elsewhere, c)
						continue
					}
					return fmt.Errorf("remove %s: %w", c.ID, err)
				}
				done = append(done, c)
			}
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
		for _, c := range elsewhere {
			// Its record is gone; what this host kept of it goes too.
			s.frozen.ended(c.ID)
			if err := s.sandboxes.RemoveJob(c.ID); err != nil {
				s.log.Warn("gc: remove sandbox", "job", c.ID, "err", err)
			}
		}
		for _, c := range done {
			s.frozen.ended(c.ID)
			if err := s.sandboxes.RemoveJob(c.ID); err != nil {
				s.log.Warn("gc: remove sandbox", "job", c.ID, "err", err)
			}
			s.log.Info("gc: job removed", "job", c.ID, "state", c.State, "ended", c.Ended)
		}
		rep.Removed = append(rep.Removed, done...)
	}
	return rep, nil
}

func removable(j *store.Job, state lifecycle.State, before time.Time) bool {
	if !j.State.Terminal() || j.State == lifecycle.Unknown || j.Updated.After(before) {
		return false
	}
	return state == "" || j.State == state
}

// retain runs the retention (Config.Retain) until ctx ends: at start and
// then every tenth of the retention, at least every minute and at most
// every hour.
func (s *Supervisor) retain(ctx context.Context) {
	every := min(max(s.cfg.Retain/10, time.Minute), time.Hour)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rep, err := s.GC(ctx, GCRequest{OlderThan: s.cfg.Retain})
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Error("retention", "err", err)
		case err == nil && len(rep.Removed) > 0:
			s.log.Info("retention removed ended jobs", "jobs", len(rep.Removed), "ended_before", rep.Before)
		}
		t.Reset(every)
	}
}
