package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// A store restored from a backup has forgotten everything after the
// backup, while the home has not: the acts that ran (emit.jsonl), the
// certificates that were accepted (the sandboxes), the boots that
// started. A start must find that out without being told, and fence the
// store before anything is dispatched: what may have moved on since the
// backup becomes unknown and is never run again until its owner
// reconciles it (docs/store.md, "Recovering"; the reasoning in
// docs/design/restore.md). What shows a store older than its home:
//
//   - the store file is a backup copy (Meta.Backup, written into every
//     copy store backup makes), however it was put back;
//   - `store restore` put it in place (the restore mark, written before
//     the file is moved);
//   - the home's high-water mark names a later boot than the store's
//     (written at every daemon start, after its boot is committed and
//     before anything is dispatched: a cold copy put back by hand);
//   - the emit log's last line is of an operation whose claim the store
//     does not hold (a line is written only after its claim commits);
//   - a sandbox belongs to an attempt the store never prepared, or to a
//     job it does not know and never removed.

// RestoreReport is what a start found of a restore, and what its fence
// did.
type RestoreReport struct {
	// Reasons say what showed the store older than its home.
	Reasons []string `json:"reasons"`
	// Invocations counts the live invocations the fence covers (none
	// acts by itself again); Operations the operations it recorded
	// unknown because they waited at the backup.
	Invocations int `json:"invocations"`
	Operations  int `json:"operations"`
	// Jobs counts the jobs that ended unknown because a sandbox holds an
	// attempt the store does not say is accepted (it may have been,
	// after the backup); Orphans the jobs the store does not know whose
	// sandboxes are kept (their tombstones refuse their ids).
	Jobs    int `json:"jobs"`
	Orphans int `json:"orphans"`
}

// restoreEvidence is what a start found.
type restoreEvidence struct {
	reasons   []string
	highWater uint64
	emitted   uint64 // lines of emit.jsonl
	// sandboxes are the attempts with a sandbox, by job; orphans the
	// jobs with a sandbox and neither a record nor a tombstone.
	sandboxes map[string][]uint32
	orphans   map[string]bool
}

func (ev *restoreEvidence) restored() bool { return ev != nil && len(ev.reasons) > 0 }

// maxReasons bounds what a start lists of each kind of evidence.
const maxReasons = 3

// findRestore looks for every sign that st (the home's own store) is
// older than the home. jobs says whether st is the job store (not a
// store shared by several hosts): then its boots and the sandboxes count
// too.
func (s *Supervisor) findRestore(ctx context.Context, st store.Local, sandboxes *artifacts.Inventory) (*restoreEvidence, error) {
	return findRestore(ctx, s.cfg.Home, st, s.emitter, sandboxes)
}

// RestoreUnfenced says why the home's store st is older than the home
// and not fenced yet (nil: it is not), for a command that works on the
// home without a daemon: it must not dispatch on such a store, which
// only a start (serve, run) fences. em is the home's emit log, if open.
func RestoreUnfenced(ctx context.Context, home string, st *bolt.Store, em *hostact.Emitter) ([]string, error) {
	sandboxes := &artifacts.Inventory{}
	if _, err := os.Stat(SandboxDir(home)); err == nil {
		root, err := openSandboxes(home)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		if sandboxes, err = root.Scan(); err != nil {
			return nil, fmt.Errorf("read the sandboxes: %w", err)
		}
	}
	ev, err := findRestore(ctx, home, st.Local(), em, sandboxes)
	if err != nil {
		return nil, err
	}
	return ev.reasons, nil
}

// findRestore is the search, with the scan of the home's sandboxes (nil:
// the store is not the job store, and neither its boots nor the
// sandboxes count).
func findRestore(ctx context.Context, home string, st store.Local, em *hostact.Emitter, sandboxes *artifacts.Inventory) (*restoreEvidence, error) {
	jobs := sandboxes != nil
	ev := &restoreEvidence{sandboxes: map[string][]uint32{}, orphans: map[string]bool{}}
	var mark RestoreMark
	if ok, err := readJSONFile(RestoreMarkPath(home), &mark); err != nil {
		return nil, err
	} else if ok {
		ev.reasons = append(ev.reasons, fmt.Sprintf("store restore put %s in place at %s", mark.From, mark.At.Format(time.RFC3339)))
	}
	var hw highWater
	if jobs {
		if _, err := readJSONFile(HighWaterPath(home), &hw); err != nil {
			return nil, err
		}
		ev.highWater = hw.Boots
		// A home that served on a shared store keeps that store's
		// certificates in its sandboxes: they say nothing of its own.
		shared, err := readJSONFile(SharedMarkPath(home), &sharedMark{})
		if err != nil {
			return nil, err
		}
		if !shared {
			sandboxes.Each(func(job string, n uint32) bool {
				ev.sandboxes[job] = append(ev.sandboxes[job], n)
				return true
			})
		}
	}
	var last struct {
		op      string
		attempt uint32
		ok      bool
	}
	if em != nil {
		ids, ok := em.Last()
		last.op, last.attempt, last.ok = ids.Operation, ids.Attempt, ok && ids.Operation != ""
		ev.emitted = em.Lines()
	}
	err := st.View(ctx, func(tx store.LocalTx) error {
		meta, err := tx.Meta()
		if err != nil {
			return err
		}
		if b := meta.Backup; b != nil {
			ev.reasons = append(ev.reasons, fmt.Sprintf("the store file is a backup taken at %s (boot %d)", b.Taken.Format(time.RFC3339), b.Boots))
		}
		if jobs && hw.Boots > meta.Boots {
			ev.reasons = append(ev.reasons, fmt.Sprintf("the store is at boot %d, the home's high-water mark at boot %d", meta.Boots, hw.Boots))
		}
		// Lines up to the last fence's are from before it: the history a
		// restore forgot wrote some, and they have no claim here.
		if last.ok && (meta.Fence == nil || ev.emitted > meta.Fence.Emitted) {
			if _, err := tx.Claim(last.op, last.attempt); errors.Is(err, store.ErrNotFound) {
				ev.reasons = append(ev.reasons, fmt.Sprintf("the last line of emit.jsonl is of operation %s, attempt %d, which the store holds no claim of", last.op, last.attempt))
			}
		}
		beyond, orphans := 0, 0
		for job, ns := range ev.sandboxes {
			j, err := tx.Job(job)
			switch {
			case errors.Is(err, store.ErrNotFound):
				if _, terr := tx.Tombstone(job); errors.Is(terr, store.ErrNotFound) {
					ev.orphans[job] = true
					if orphans++; orphans <= maxReasons {
						ev.reasons = append(ev.reasons, fmt.Sprintf("job %s has a sandbox and no record", job))
					}
				}
			case err != nil:
				return err
			case j.State.Terminal():
				// An ended job cannot have moved on since any backup
				// that holds it ended: its sandboxes say nothing.
			default:
				for _, n := range ns {
					if n > j.Attempts {
						if beyond++; beyond <= maxReasons {
							ev.reasons = append(ev.reasons, fmt.Sprintf("attempt %d of job %s has a sandbox, the store prepared %d", n, job, j.Attempts))
						}
						break
					}
				}
			}
		}
		if n := orphans + beyond - min(orphans, maxReasons) - min(beyond, maxReasons); n > 0 {
			ev.reasons = append(ev.reasons, fmt.Sprintf("and %d more sandboxes the store does not know", n))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look for a restore: %w", err)
	}
	return ev, nil
}

// fenceRestored fences, in the caller's transaction, a store found older
// than its home: the store records the fence (Meta.Fence) and forgets it
// was a backup; invocation seqs move past any the lost history used;
// every live invocation is fenced and the operation it waited on is
// recorded unknown (fencing.Engine.FenceRestored); with jobs, every live
// job's unfinished attempts become unknown, and a job with a sandbox of
// an attempt the store does not say is accepted ends unknown (it may
// have been accepted after the backup) while the others are recovered as
// after a crash. It returns what it did; rec counts the jobs' part.
func (s *Supervisor) fenceRestored(tx store.LocalTx, ev *restoreEvidence, jobs bool, rec *Recovery) (*RestoreReport, error) {
	rt, ok := tx.(bolt.RestoreTx)
	if !ok {
		return nil, fmt.Errorf("fence a restored store: %w: the store cannot be fenced", store.ErrInvariant)
	}
	now := s.now()
	rep := &RestoreReport{Reasons: ev.reasons, Orphans: len(ev.orphans)}
	meta, err := tx.Meta()
	if err != nil {
		return nil, err
	}
	fence := &store.RestoreFence{At: now, Restores: 1, Invocations: rt.InvocationSeq(), Reason: strings.Join(ev.reasons, "; "), Emitted: ev.emitted}
	if meta.Fence != nil {
		fence.Restores = meta.Fence.Restores + 1
	}
	meta.Backup, meta.Fence = nil, fence
	if jobs {
		// The boots go on from the highest the home has seen: the mark
		// only ever rises, and a copy of any earlier one reads older.
		meta.Boot, meta.Boots = s.ident().boot, max(meta.Boots, ev.highWater)+1
		rec.Boots = meta.Boots
	}
	if err := tx.PutMeta(meta); err != nil {
		return nil, err
	}
	// The invocations made after the backup had the seqs after the
	// store's, so their ids (and their operations' ids, which emit.jsonl
	// holds) are taken: new ones start past them, at the clock's
	// nanoseconds (more than one invocation per nanosecond since an
	// earlier fence would be needed to reach it).
	if err := rt.SkipInvocationSeqs(max(rt.InvocationSeq(), uint64(now.UnixNano()))); err != nil {
		return nil, err
	}
	if s.fence != nil {
		fr, err := s.fence.FenceRestored(tx)
		if err != nil {
			return nil, fmt.Errorf("fence the invocations: %w", err)
		}
		rep.Invocations, rep.Operations = fr.Fenced, fr.Unknown
	}
	if !jobs {
		return rep, nil
	}
	for id := range ev.orphans {
		if err := rt.ForgetJob(id, now); err != nil {
			return nil, err
		}
	}
	var live []*store.Job
	if err := tx.ForEachLive(func(j *store.Job) bool { live = append(live, j); return true }); err != nil {
		return nil, err
	}
	why := "the store was restored from a backup (boot " + s.ident().boot + ")"
	for _, j := range live {
		var evidence []uint32
		for _, n := range ev.sandboxes[j.ID] {
			if n != j.Accepted {
				evidence = append(evidence, n)
			}
		}
		if len(evidence) == 0 {
			if err := s.recoverJob(tx, j, func(*store.Attempt) bool { return true }, why, rec); err != nil {
				return nil, err
			}
			continue
		}
		if err := s.endRestoredJob(tx, j, evidence[0], why, rec); err != nil {
			return nil, err
		}
		rep.Jobs++
	}
	return rep, nil
}

// endRestoredJob ends a live job of a restored store unknown: attempt n
// has a sandbox (a certificate kept when it was verified, before its
// acceptance committed), so the job may have been accepted after the
// backup, and it is never run again. Its unfinished attempts become
// unknown, as after a crash.
func (s *Supervisor) endRestoredJob(tx store.Tx, j *store.Job, n uint32, why string, rec *Recovery) error {
	now := s.now()
	atts, err := tx.Attempts(j.ID)
	if err != nil {
		return err
	}
	host := s.ident().host
	for _, at := range atts {
		if at.State.Terminal() {
			continue
		}
		from := at.State
		at.State, at.Ended = lifecycle.Unknown, now
		if err := tx.PutAttempt(at); err != nil {
			return err
		}
		rec.UnknownAttempts++
		if err := tx.AppendEvent(store.Event{Job: j.ID, Time: now, Attempt: at.N, Host: host, From: from, To: at.State,
			Reason: why + ": outcome unknown, never redispatched"}); err != nil {
			return err
		}
	}
	from := j.State
	j.State, j.Updated = lifecycle.Unknown, now
	j.Error = protocol.Errorf(protocol.CodeInternalError, "%s: attempt %d left its certificate in its sandbox and may have been accepted after the backup; the job is not run again", why, n)
	if err := tx.PutJob(j); err != nil {
		return err
	}
	if err := tx.Dequeue(j.ID); err != nil {
		return err
	}
	rec.EndedUnknown++
	s.log.Warn("restore: job ended unknown: a sandbox holds an attempt the store does not say is accepted", "job", j.ID, "attempt", n)
	return tx.AppendEvent(store.Event{Job: j.ID, Time: now, Attempt: n, From: from, To: j.State,
		Reason: fmt.Sprintf("after %s: attempt %d has a sandbox (its certificate) and may have been accepted after the backup; not run again", why, n)})
}
