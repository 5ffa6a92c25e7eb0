package supervisor

import (
	"context"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func openSandboxes(home string) (*artifacts.Root, error) {
	root, err := artifacts.OpenRoot(SandboxDir(home))
	if err != nil {
		return nil, fmt.Errorf("open sandboxes: %w", err)
	}
	return root, nil
}

// recover starts a boot: every attempt the previous boot left unfinished
// becomes unknown (it may have run; it is never dispatched again), jobs
// whose retry policy allows it are queued for a new attempt, others end
// unknown. Then leftover workers and sandboxes go.
func (s *Supervisor) recover(ctx context.Context) error {
	keep := map[string]uint32{}
	err := s.store.Update(ctx, func(tx store.Tx) error {
		meta, err := tx.Meta()
		if err != nil {
			return err
		}
		meta.Boot, meta.Boots = s.boot, meta.Boots+1
		if err := tx.PutMeta(meta); err != nil {
			return err
		}
		var jobs []*store.Job
		if err := tx.ForEachJob(func(j *store.Job) bool {
			if j.State == lifecycle.Accepted && j.Operation == string(protocol.OpProve) {
				keep[j.ID] = j.Accepted
			}
			if !j.State.Terminal() {
				jobs = append(jobs, j)
			}
			return true
		}); err != nil {
			return err
		}
		for _, j := range jobs {
			if err := s.recoverJob(tx, j); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("recover store: %w", err)
	}
	if err := s.cfg.Launcher.RemoveLeftovers(ctx); err != nil {
		s.log.Warn("remove leftover workers", "err", err)
	}
	// Only accepted certificates outlive their boot.
	if err := s.sandboxes.RemoveAll(func(job string, n uint32) bool { return keep[job] == n }); err != nil {
		s.log.Warn("remove leftover sandboxes", "err", err)
	}
	return nil
}

func (s *Supervisor) recoverJob(tx store.Tx, j *store.Job) error {
	now := s.now()
	atts, err := tx.Attempts(j.ID)
	if err != nil {
		return err
	}
	hadUnknown := false
	for _, at := range atts {
		if at.State.Terminal() {
			continue
		}
		from := at.State
		at.State, at.Ended = lifecycle.Unknown, now
		if err := tx.PutAttempt(at); err != nil {
			return err
		}
		hadUnknown = true
		if err := tx.AppendEvent(store.Event{Job: j.ID, Time: now, Attempt: at.N, From: from, To: lifecycle.Unknown,
			Reason: "supervisor restarted (boot " + s.boot + "): outcome unknown, never redispatched"}); err != nil {
			return err
		}
	}
	from := j.State
	switch {
	case j.CancelRequested:
		j.State = lifecycle.Cancelled
		j.Error = protocol.Errorf(protocol.CodeCancelled, "cancelled (completed at restart)")
	case !hadUnknown && j.State == lifecycle.Queued:
		// Waiting in the queue: it stays there.
		return tx.Enqueue(j.ID, j.Priority, j.Seq)
	case j.Attempts < j.Retry.MaxAttempts:
		j.State = lifecycle.Queued
		j.NotBefore = now
	default:
		j.State = lifecycle.Unknown
		j.Error = protocol.Errorf(protocol.CodeInternalError, "the supervisor restarted while the job ran; its outcome is unknown")
	}
	j.Updated = now
	if err := tx.PutJob(j); err != nil {
		return err
	}
	reason := "after restart: " + string(j.State)
	if j.State == lifecycle.Queued {
		reason = "after restart: queued for a new attempt (retry policy allows it)"
		if err := tx.Enqueue(j.ID, j.Priority, j.Seq); err != nil {
			return err
		}
	} else if err := tx.Dequeue(j.ID); err != nil {
		return err
	}
	return tx.AppendEvent(store.Event{Job: j.ID, Time: now, From: from, To: j.State, Reason: reason})
}
