package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// outcome is how an attempt's run ended, before acceptance.
type outcome struct {
	result   *protocol.Result
	err      *protocol.Error
	state    lifecycle.State // failed, cancelled or rejected when err != nil
	killedBy string          // deadline, cancel, shutdown
	// interrupted: the supervisor's own shutdown stopped the attempt; its
	// job is queued for the next start when its policy allows.
	interrupted bool
	// hostile: the worker broke the launch protocol on purpose (see
	// ErrHostileWorker); no retry policy applies to that.
	hostile bool
	exit    Exit
	wall    time.Duration
}

// runAttempt drives one prepared attempt to a terminal state.
func (s *Supervisor) runAttempt(a *active) {
	ctx := context.Background()
	log := s.log.With("job", a.job.ID, "attempt", a.n)
	spec, prog, err := s.frozenSpec(a)
	if err != nil {
		// The spec was admitted and frozen: failing to read it back is
		// the store's fault, not the job's.
		s.finish(ctx, a, outcome{err: protocol.Errorf(protocol.CodeInternalError, "read frozen spec: %v", err), state: lifecycle.Failed})
		return
	}
	if a.cancelled() {
		s.finish(ctx, a, s.stoppedOutcome(a, "", "before launch"))
		return
	}
	sb := s.newAttemptSandbox(a)
	defer sb.close()
	req := LaunchRequest{Job: a.job.ID, Attempt: a.n, Limits: spec.Limits}
	if !s.launcherOwnsWorkDirs() {
		dir, err := sb.open()
		if err != nil {
			s.finish(ctx, a, outcome{err: protocol.Errorf(protocol.CodeIOError, "create sandbox: %v", err), state: lifecycle.Failed})
			return
		}
		req.WorkDir = dir.Path()
	}
	if s.fenced() {
		// The registration is lost: this boot dispatches nothing, and the
		// attempt is the other hosts' to recover.
		sb.discard()
		return
	}
	// The wall-clock limit runs from the launch: whatever the attempt
	// waits for from here on (the worker's handshake, its acceptance of
	// the job, its result) ends at the deadline.
	start := time.Now()
	var deadline time.Time
	if ms := spec.Limits.WallTimeMS; ms > 0 {
		deadline = start.Add(time.Duration(ms) * time.Millisecond)
	}
	w, err := s.launch(ctx, req, deadline)
	if err != nil {
		log.Warn("launch failed", "err", err)
		out := outcome{err: launchError(err), state: lifecycle.Failed, wall: time.Since(start), hostile: errors.Is(err, ErrHostileWorker)}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			out.err, out.killedBy = wallLimitExceeded(spec), "deadline"
		}
		s.finish(ctx, a, out)
		sb.discard()
		return
	}
	// A jailed worker writes to a tmpfs of its own; the sandbox then only
	// receives what is kept (keepArtifact).
	work, err := w.Files()
	if err == nil && work == nil && sb.dir == nil {
		err = errors.New("the launcher gave the worker no work dir")
	}
	if err != nil {
		w.Close(ctx)
		s.finish(ctx, a, outcome{err: protocol.Errorf(protocol.CodeIOError, "open the worker's work dir: %v", err), state: lifecycle.Failed})
		sb.discard()
		return
	}
	if work == nil {
		work = sb.dir
	} else {
		defer work.Close()
	}
	// The attempt's claim was made with it; an attempt of an older
	// generation than the current placement is never dispatched.
	if moved, err := s.placementMoved(ctx, a); err != nil || moved {
		w.Close(ctx)
		out := outcome{err: protocol.Errorf(protocol.CodeStaleState, "the placement generation moved since the attempt was prepared: it is not dispatched"), state: lifecycle.Failed}
		if err != nil {
			out.err = protocol.Errorf(protocol.CodeInternalError, "read the placement: %v", err)
		}
		log.Warn("attempt not dispatched", "err", out.err)
		s.finish(ctx, a, out)
		sb.discard()
		return
	}
	if err := s.transition(ctx, a, lifecycle.Running, "worker launched", func(at *store.Attempt, when time.Time) { at.Started = when }); err != nil {
		// Not recorded as running: the job is not given to the worker,
		// whatever stopped the record (a lost registration, or another
		// host that recovered the attempt meanwhile).
		log.Error("record running: the worker is not given the job", "err", err)
		s.killWorker(w, log)
		w.Close(ctx)
		sb.discard()
		if !errors.Is(err, store.ErrFenced) {
			// It never ran: a failure its job's policy may retry (a
			// record refused because the attempt ended elsewhere is
			// refused again, and logged).
			s.finish(ctx, a, outcome{err: protocol.Errorf(protocol.CodeInternalError, "record the attempt as running: %v", err), state: lifecycle.Failed})
		}
		return
	}
	if s.hooks.afterRunning != nil {
		s.hooks.afterRunning(a.job.ID, a.n)
	}
	// The record committed while the registration stood. A host paused
	// between that commit and here (SIGSTOP, a stall) may have lost it
	// since, and the attempt be another host's to recover by now: the job
	// goes to the worker only while the lease's deadline has not passed.
	// (What is left is the time from this check to the worker's Start.)
	if !s.registrationStands(a) {
		log.Error("the registration was lost after the running record: the worker is not given the job")
		s.killWorker(w, log)
		w.Close(ctx)
		sb.discard()
		return
	}
	out := s.drive(a, spec, w, deadline, log)
	var full bool
	var bound int64
	if out.result != nil {
		full, bound = w.WorkDirFull()
		// A result is in hand: whether the worker is OOM-killed now changes
		// nothing (the result is verified on its own), so its teardown —
		// kill, reap, cgroup removal, ~10-20 ms — leaves the attempt's
		// critical path. Close still runs before the supervisor closes.
		out.wall = time.Since(start)
		out.exit.Usage = w.Usage()
		s.teardowns.Add(1)
		go func() {
			defer s.teardowns.Done()
			if _, err := w.Close(context.Background()); err != nil {
				log.Warn("worker cleanup", "err", err)
			}
		}()
	} else {
		exit, cerr := w.Close(ctx)
		if cerr != nil {
			log.Warn("worker cleanup", "err", cerr)
		}
		out.exit, out.wall = exit, time.Since(start)
		full, bound = w.WorkDirFull()
	}
	s.metrics.attemptDone(out.wall, out.killedBy != "", out.exit.OOMKilled)
	// The cgroup decides about memory, whatever the worker said.
	if out.exit.OOMKilled {
		out.result, out.state = nil, lifecycle.Failed
		out.err = protocol.Errorf(protocol.CodeMemoryExhausted, "the worker exceeded its memory limit of %d bytes", spec.Limits.MemoryBytes)
	}
	// So does the work dir's file system about its size.
	if full {
		out.result, out.state = nil, lifecycle.Failed
		out.err = protocol.Errorf(protocol.CodeArtifactTooLarge,
			"the worker filled its work dir (%d bytes: the artifact limit and a margin)", bound)
	}
	if out.result == nil {
		if out.err != nil && out.state == lifecycle.Failed {
			out = s.judgeFailure(spec, prog, out)
		}
		s.finish(ctx, a, out)
		sb.discard()
		return
	}
	if !s.accept(ctx, a, spec, prog, out, work, sb, log) {
		sb.discard()
	}
}

// stoppedOutcome is the outcome of an attempt that was stopped: cancelled
// by request (the reason says by whom), or interrupted by the
// supervisor's shutdown (when: "before launch", or "" once it ran).
func (s *Supervisor) stoppedOutcome(a *active, killedBy, when string) outcome {
	if when != "" {
		when = " " + when
	}
	reason, shutdown := a.cancelInfo()
	if shutdown {
		return outcome{err: protocol.Errorf(protocol.CodeCancelled, "%s%s", interruptedByShutdown, when),
			state: lifecycle.Cancelled, killedBy: killedBy, interrupted: true}
	}
	return outcome{err: protocol.Errorf(protocol.CodeCancelled, "%s%s", cancelReason(reason), when), state: lifecycle.Cancelled, killedBy: killedBy}
}

// interruptedByShutdown begins the error of an attempt the supervisor's
// own stop (or a drain's deadline) interrupted.
const interruptedByShutdown = "interrupted by the supervisor's shutdown"

// InterruptedByShutdown reports whether attempt a ended because the
// supervisor stopped (a stop, or a drain's deadline): its job was queued
// again, the attempt not counted against its policy.
func InterruptedByShutdown(a *store.Attempt) bool {
	return a.State == lifecycle.Cancelled && a.Error != nil && a.Error.Code == protocol.CodeCancelled &&
		strings.HasPrefix(a.Error.Message, interruptedByShutdown)
}

// cancelReason is a cancellation's reason as the message of its error
// (whose code already says "cancelled"): the reason given, or "by
// request".
func cancelReason(reason string) string {
	if r := strings.TrimSpace(strings.TrimPrefix(reason, "cancelled")); r != "" {
		return strings.TrimLeft(r, ": ")
	}
	return "by request"
}

func (s *Supervisor) killWorker(w Worker, log interface{ Warn(string, ...any) }) {
	ctx, cancel := context.WithTimeout(context.Background(), KillBound)
	defer cancel()
	if err := w.Kill(ctx); err != nil {
		log.Warn("kill worker", "err", err)
	}
}

func launchError(err error) *protocol.Error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	return protocol.Errorf(protocol.CodeInternalError, "launch worker: %v", err)
}

// finish ends a failed, rejected or cancelled attempt and decides
// whether the job gets another attempt: a failure its retry policy
// retries (after the backoff), or an attempt interrupted by the
// supervisor's shutdown, whatever the policy (at the next start, or at
// once on another host of a cluster; counted, but not against the
// policy: store.Job.Interrupted); a cancel request ends the job whatever
// else.
func (s *Supervisor) finish(ctx context.Context, a *active, out outcome) {
	defer s.changes.notify(a.job.ID)
	retried := false
	err := s.updateAttempt(ctx, a, func(tx store.Tx) error {
		retried = false
		at, err := tx.Attempt(a.job.ID, a.n)
		if err != nil {
			return err
		}
		job, err := tx.Job(a.job.ID)
		if err != nil {
			return err
		}
		now := s.now()
		from := at.State
		at.State, at.Ended, at.Error = out.state, now, out.err
		at.Telemetry = store.Telemetry{WallTime: out.wall, CPUTime: out.exit.CPUTime, PeakMemory: out.exit.PeakMemory, Killed: out.killedBy, OOM: out.exit.OOMKilled}
		if err := tx.PutAttempt(at); err != nil {
			return err
		}
		if err := tx.AppendEvent(store.Event{Job: job.ID, Time: now, Attempt: a.n, Host: s.id.host, From: from, To: out.state, Reason: describe(out.err)}); err != nil {
			return err
		}
		job.Updated = now
		// The closure may run again (a conflict on a shared store): what
		// it decides stays in its own variables.
		var why string
		switch {
		case job.CancelRequested, out.hostile:
		case out.interrupted:
			// The supervisor's own stop is no fault of the job: it is
			// queued again whatever its retry policy, and the attempt,
			// counted, is not one of those the policy allows.
			job.Interrupted++
			job.NotBefore = now
			why = fmt.Sprintf("attempt %d interrupted by the supervisor's shutdown; queued for the next start or another host (attempt %d of %d: an interrupted attempt does not count against the job's retry policy)",
				a.n, job.Attempts+1, job.AttemptsAllowed())
		case out.state == lifecycle.Failed && s.mayRetry(job, out.err):
			job.NotBefore = now.Add(backoff(job.Retry, policyAttempts(job)))
			why = fmt.Sprintf("attempt %d failed (%s); retry %d of %d after %s",
				a.n, describe(out.err), job.Attempts+1, job.AttemptsAllowed(), job.NotBefore.Sub(now))
		}
		if why != "" {
			job.State = lifecycle.Queued
			if err := tx.PutJob(job); err != nil {
				return err
			}
			if err := tx.Enqueue(job.ID, job.Priority, job.Seq); err != nil {
				return err
			}
			retried = true
			return tx.AppendEvent(store.Event{Job: job.ID, Time: now, From: out.state, To: lifecycle.Queued, Reason: why})
		}
		job.State, job.Error = out.state, out.err
		if job.CancelRequested && out.state != lifecycle.Cancelled {
			// A cancel that raced with the end of the attempt still ends the job.
			job.State = lifecycle.Cancelled
		}
		return tx.PutJob(job)
	})
	if err != nil {
		s.log.Error("record attempt end", "job", a.job.ID, "attempt", a.n, "err", err)
		return
	}
	if !retried {
		s.frozen.ended(a.job.ID)
	}
	s.metrics.finished(out.state)
	if out.err.Code == protocol.CodeIOError {
		// The host's disk or device failed the attempt: the operator's
		// business, whoever reported it.
		s.log.Error("attempt ended on an I/O failure", "job", a.job.ID, "attempt", a.n, "state", out.state, "err", out.err.Message, "requeued", retried)
		return
	}
	s.log.Info("attempt ended", "job", a.job.ID, "attempt", a.n, "state", out.state, "code", out.err.Code, "requeued", retried)
}

// policyAttempts is how many of the job's attempts its retry policy
// counts: not those a shutdown interrupted or the operator granted.
func policyAttempts(job *store.Job) uint32 {
	if extra := job.Interrupted + job.Granted; extra < job.Attempts {
		return job.Attempts - extra
	}
	return 1
}

// mayRetry applies the job's retry policy to a failed attempt.
func (s *Supervisor) mayRetry(job *store.Job, e *protocol.Error) bool {
	if job.Attempts >= job.AttemptsAllowed() {
		return false
	}
	if job.Retry.Retryable == nil {
		return e.Retryable
	}
	for _, c := range job.Retry.Retryable {
		if c == e.Code {
			return true
		}
	}
	return false
}
