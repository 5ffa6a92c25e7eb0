package supervisor

import (
	"context"
	"errors"
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

// Recovery is what a start found of the previous boots and did about it
// (logged at info by Open).
type Recovery struct {
	Boots uint64 // this boot's number (local store)
	// UnknownAttempts were running (or prepared) when the previous boot
	// ended: they may have run and are never dispatched again.
	UnknownAttempts int
	Requeued        int // jobs queued for a new attempt (their retry policy allows it)
	EndedUnknown    int // jobs that ended unknown (no attempt left)
	Cancelled       int // jobs whose cancellation completed
	Queued          int // jobs that were waiting in the queue and still are
	Leftovers       int // cgroups and worker dirs of earlier boots removed
	Sandboxes       int // attempt sandboxes removed (only accepted certificates stay)
	// ForeignSandboxes are sandboxes of jobs the store does not know
	// (another store's, or unreadable now): kept.
	ForeignSandboxes int
}

func (r *Recovery) add(o Recovery) {
	r.UnknownAttempts += o.UnknownAttempts
	r.Requeued += o.Requeued
	r.EndedUnknown += o.EndedUnknown
	r.Cancelled += o.Cancelled
	r.Queued += o.Queued
}

// recover starts a boot: every attempt a previous boot left unfinished
// becomes unknown (it may have run; it is never dispatched again), jobs
// whose retry policy allows it are queued for a new attempt, others end
// unknown. Then leftover workers and sandboxes go. On the home's own
// store this supervisor owns every attempt, so every other boot is over;
// on a shared store only the boots that are no longer registered are
// (sweep: this host's earlier boots among them, whose registration the
// join replaced).
func (s *Supervisor) recover(ctx context.Context) (Recovery, error) {
	var (
		rec Recovery
		err error
	)
	if s.cluster != nil {
		rec = s.sweep(ctx)
	} else if rec, err = s.recoverLocal(ctx); err != nil {
		return rec, err
	}
	if !s.cfg.OneShot { // a one-shot Open removed them before its worker started
		rec.Leftovers = s.removeLeftovers(ctx)
	}
	// Only accepted certificates outlive their boot: each sandbox left is
	// looked up (there are as many as kept certificates and leftovers,
	// not as many as jobs).
	fates := map[string]jobSandboxes{}
	if err := s.sandboxes.RemoveAll(func(job string, n uint32) bool {
		f, ok := fates[job]
		if !ok {
			f = s.sandboxesOf(ctx, job)
			fates[job] = f
		}
		switch {
		case f.foreign:
			rec.ForeignSandboxes++
			return true
		case f.keeps(n):
			return true
		}
		rec.Sandboxes++
		return false
	}); err != nil {
		s.log.Warn("remove leftover sandboxes", "err", err)
	}
	return rec, nil
}

// jobSandboxes is what the store says of one job's sandboxes at start.
type jobSandboxes struct {
	// foreign: the store does not know the job (another store's: the
	// home served on another one, or the store was restored from an older
	// copy), or could not say: every sandbox of it stays. A start never
	// deletes what its store does not know; only the gc or retention of
	// the store that holds the job removes its certificate.
	foreign bool
	// accepted is the attempt whose certificate is the job's accepted
	// one (0: none).
	accepted uint32
}

func (f jobSandboxes) keeps(n uint32) bool { return f.accepted != 0 && f.accepted == n }

// sandboxesOf asks the store about job: a job it holds keeps the
// sandbox of its accepted certificate (a prove job's) and no other; one
// it removed (its tombstone) keeps none; one it does not know, or a
// failed read, keeps all.
func (s *Supervisor) sandboxesOf(ctx context.Context, job string) jobSandboxes {
	var f jobSandboxes
	err := s.store.View(ctx, func(tx store.Tx) error {
		f = jobSandboxes{}
		j, err := tx.Job(job)
		if err == nil {
			if j.State == lifecycle.Accepted && j.Operation == string(protocol.OpProve) {
				f.accepted = j.Accepted
			}
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if _, err := tx.Tombstone(job); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				f.foreign = true
				return nil
			}
			return err
		}
		return nil // collected by this store's gc or retention
	})
	if err != nil {
		s.log.Warn("start: cannot tell whether the store knows the job; its sandboxes are kept", "job", job, "err", err)
		return jobSandboxes{foreign: true}
	}
	return f
}

// recoverLocal is recovery on the home's own store, in one transaction.
func (s *Supervisor) recoverLocal(ctx context.Context) (Recovery, error) {
	var rec Recovery
	boot := s.ident().boot
	// One-shot, with nothing to recover: the boot is recorded with the
	// job it runs (Submit writes the meta record anyway) instead of in a
	// commit of its own.
	quiet := false
	if s.cfg.OneShot {
		err := s.store.View(ctx, func(tx store.Tx) error {
			meta, err := tx.Meta()
			if err != nil {
				return err
			}
			none := true
			if err := tx.ForEachLive(func(*store.Job) bool { none = false; return false }); err != nil {
				return err
			}
			quiet, rec.Boots = none, meta.Boots+1
			return nil
		})
		if err != nil {
			return rec, fmt.Errorf("recover store: %w", err)
		}
	}
	s.bootPending = quiet
	if quiet {
		return rec, nil
	}
	err := s.store.Update(ctx, func(tx store.Tx) error {
		rec = Recovery{}
		meta, err := tx.Meta()
		if err != nil {
			return err
		}
		meta.Boot, meta.Boots = boot, meta.Boots+1
		rec.Boots = meta.Boots
		if err := tx.PutMeta(meta); err != nil {
			return err
		}
		// Only the jobs that have not ended (the live index), not every
		// job the store ever had: a start costs what it recovers.
		var jobs []*store.Job
		if err := tx.ForEachLive(func(j *store.Job) bool {
			jobs = append(jobs, j)
			return true
		}); err != nil {
			return err
		}
		for _, j := range jobs {
			if err := s.recoverJob(tx, j, func(*store.Attempt) bool { return true }, "supervisor restarted (boot "+boot+")", &rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return rec, fmt.Errorf("recover store: %w", err)
	}
	return rec, nil
}

// removeLeftovers kills and removes what workers of earlier boots left
// (under the store's lock: no other supervisor of this home is running)
// and counts it.
func (s *Supervisor) removeLeftovers(ctx context.Context) int {
	return sweepLeftovers(ctx, s.cfg.Launcher, s.log)
}

// recoverJob marks the job's unfinished attempts whose boot is over
// (over says which) unknown, then ends the job or queues it again. An
// attempt of a boot that still runs is left alone, and so is its job.
func (s *Supervisor) recoverJob(tx store.Tx, j *store.Job, over func(*store.Attempt) bool, why string, rec *Recovery) error {
	now := s.now()
	atts, err := tx.Attempts(j.ID)
	if err != nil {
		return err
	}
	host := s.ident().host
	hadUnknown := false
	for _, at := range atts {
		if at.State.Terminal() {
			continue
		}
		if !over(at) {
			return nil // running on a live boot
		}
		from := at.State
		at.State, at.Ended = lifecycle.Unknown, now
		if err := tx.PutAttempt(at); err != nil {
			return err
		}
		hadUnknown = true
		rec.UnknownAttempts++
		s.log.Info("recovery: attempt of the previous boot is unknown", "job", j.ID, "attempt", at.N, "was", from, "host", at.Host, "boot", at.Boot)
		// The event is the attempt's: it names the host the attempt ran
		// on (as its other events do), and the reason who found it.
		ranOn, reason := at.Host, why+": outcome unknown, never redispatched"
		if ranOn == "" { // an attempt recorded before attempts named their host
			ranOn = host
		}
		if ranOn != host {
			reason += " (recovered by host " + host + ")"
		}
		if err := tx.AppendEvent(store.Event{Job: j.ID, Time: now, Attempt: at.N, Host: ranOn, From: from, To: lifecycle.Unknown,
			Reason: reason}); err != nil {
			return err
		}
	}
	from := j.State
	switch {
	case !hadUnknown && s.cluster != nil:
		return nil
	case j.CancelRequested:
		j.State = lifecycle.Cancelled
		j.Error = protocol.Errorf(protocol.CodeCancelled, "completed at restart")
		if j.CancelReason != "" {
			j.Error = protocol.Errorf(protocol.CodeCancelled, "%s; completed at restart", j.CancelReason)
		}
		rec.Cancelled++
	case !hadUnknown && j.State == lifecycle.Queued:
		// Waiting in the queue (a retry or an attempt interrupted by the
		// shutdown included): it stays there.
		rec.Queued++
		return tx.Enqueue(j.ID, j.Priority, j.Seq)
	case j.Attempts < j.AttemptsAllowed():
		j.State = lifecycle.Queued
		j.NotBefore = now
		rec.Requeued++
	default:
		j.State = lifecycle.Unknown
		j.Error = protocol.Errorf(protocol.CodeInternalError, "%s while the job ran; its outcome is unknown (%s)", why, resolveHint(j.ID, j.Attempts))
		rec.EndedUnknown++
	}
	j.Updated = now
	if err := tx.PutJob(j); err != nil {
		return err
	}
	reason := "after " + why + ": " + string(j.State)
	if j.State == lifecycle.Queued {
		reason = "after " + why + ": queued for a new attempt (retry policy allows it)"
		if err := tx.Enqueue(j.ID, j.Priority, j.Seq); err != nil {
			return err
		}
	} else if err := tx.Dequeue(j.ID); err != nil {
		return err
	}
	s.log.Info("recovery: job "+string(j.State), "job", j.ID, "was", from)
	return tx.AppendEvent(store.Event{Job: j.ID, Time: now, From: from, To: j.State, Reason: reason})
}
