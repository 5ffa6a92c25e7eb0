package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	// Restore is set when the store was found older than its home (a
	// backup restored) and fenced (restore.go).
	Restore *RestoreReport
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
	// The sandboxes are read once: evidence of a restore (restore.go),
	// then what of them goes.
	inv, err := s.sandboxes.Scan()
	if err != nil {
		s.log.Warn("read the sandboxes", "err", err)
		inv = &artifacts.Inventory{}
	}
	if s.cluster != nil {
		rec = s.sweep(ctx)
		// The home's own store beside the shared one holds the neuron
		// and the host acts: a restored one is fenced all the same.
		if rec.Restore, err = s.fenceLocalRestore(ctx); err != nil {
			return rec, err
		}
	} else if rec, err = s.recoverLocal(ctx, inv); err != nil {
		return rec, err
	}
	rec.Leftovers = s.removeLeftovers(ctx)
	// Only accepted certificates (and evidence) outlive their boot: each
	// sandbox left is looked up (there are as many as kept certificates
	// and leftovers, not as many as jobs).
	fates := map[string]jobSandboxes{}
	if err := s.sandboxes.Prune(inv, func(job string, n uint32) bool {
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
	// evidence: every sandbox of the job stays for its owner to look at:
	// the job ended unknown, or a restored store forgot it (its tombstone
	// says so: its certificate is all that says it may have been
	// accepted).
	evidence bool
	// accepted is the attempt whose certificate is the job's accepted
	// one (0: none).
	accepted uint32
}

func (f jobSandboxes) keeps(n uint32) bool {
	return f.evidence || f.accepted != 0 && f.accepted == n
}

// sandboxesOf asks the store about job: a job it holds keeps the
// sandbox of its accepted certificate (a prove job's) and no other, or
// all of them when it ended unknown; one it removed (its tombstone) keeps
// none, unless a restore wrote the tombstone; one it does not know, or a
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
			f.evidence = j.State == lifecycle.Unknown
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		ts, err := tx.Tombstone(job)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				f.foreign = true
				return nil
			}
			return err
		}
		// Collected by this store's gc or retention, unless a restore
		// forgot it.
		f.evidence = ts.Restored
		return nil
	})
	if err != nil {
		s.log.Warn("start: cannot tell whether the store knows the job; its sandboxes are kept", "job", job, "err", err)
		return jobSandboxes{foreign: true}
	}
	return f
}

// recoverLocal is recovery on the home's own store, in one transaction.
func (s *Supervisor) recoverLocal(ctx context.Context, sandboxes *artifacts.Inventory) (Recovery, error) {
	var rec Recovery
	boot := s.ident().boot
	ev, err := s.findRestore(ctx, s.home.local, sandboxes)
	if err != nil {
		return rec, fmt.Errorf("recover store: %w", err)
	}
	// One-shot, with nothing to recover: the boot is recorded with the
	// job it runs (Submit writes the meta record anyway) instead of in a
	// commit of its own.
	quiet := false
	if s.cfg.OneShot && !ev.restored() {
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
	s.bootPending.Store(quiet)
	if quiet {
		return rec, nil
	}
	// The home's own file: a restored one is fenced in the transaction
	// that recovers its jobs (its invocations are in it as well).
	err = s.home.local.Update(ctx, func(tx store.LocalTx) error {
		rec = Recovery{}
		if ev.restored() {
			rep, err := s.fenceRestored(tx, ev, true, &rec)
			rec.Restore = rep
			return err
		}
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
	s.restoreFenced(rec.Restore)
	if !s.cfg.OneShot {
		// Before anything is dispatched: a copy of the store from before
		// this boot, put back by hand, reads older than its home.
		if err := writeHighWater(s.cfg.Home, rec.Boots); err != nil {
			s.log.Error("the home's high-water mark was not written: a copy of this store put back by hand may not be found older than its home", "err", err)
		}
	}
	return rec, nil
}

// fenceLocalRestore fences the home's own store beside a shared job
// store when it was restored: its invocations (the jobs are the shared
// store's).
func (s *Supervisor) fenceLocalRestore(ctx context.Context) (*RestoreReport, error) {
	ev, err := s.findRestore(ctx, s.home.local, nil)
	if err != nil || !ev.restored() {
		return nil, err
	}
	var rep *RestoreReport
	err = s.home.local.Update(ctx, func(tx store.LocalTx) (err error) {
		rep, err = s.fenceRestored(tx, ev, false, &Recovery{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fence the home's restored store: %w", err)
	}
	s.restoreFenced(rep)
	return rep, nil
}

// restoreFenced logs a committed fence and removes the restore mark it
// answered.
func (s *Supervisor) restoreFenced(rep *RestoreReport) {
	if rep == nil {
		return
	}
	s.log.Warn("the store is older than its home (restored from a backup) and was fenced: what may have moved on since the backup is unknown until reconciled",
		"why", strings.Join(rep.Reasons, "; "), "invocations_fenced", rep.Invocations, "operations_unknown", rep.Operations,
		"jobs_unknown", rep.Jobs, "orphan_jobs", rep.Orphans)
	if err := restoreDone(s.cfg.Home); err != nil {
		s.log.Warn("the restore mark was not removed: the next start fences the store again", "err", err)
	}
}

// removeLeftovers kills and removes what workers of earlier boots left
// (under the store's lock: no other supervisor of this home is running)
// and counts it.
func (s *Supervisor) removeLeftovers(ctx context.Context) int {
	left, err := s.cfg.Launcher.RemoveLeftovers(ctx)
	if err != nil {
		s.log.Warn("remove leftover workers", "err", err)
	}
	for _, what := range left {
		s.log.Debug("recovery: removed", "what", what)
	}
	return len(left)
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
