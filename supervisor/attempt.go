package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
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
	// launch.ErrHostileWorker); no retry policy applies to that.
	hostile bool
	exit    launch.Exit
	wall    time.Duration
}

// runAttempt drives one prepared attempt to a terminal state: its stages
// (attemptRun.run) end in an outcome, which is recorded (finish) or, for
// a result, goes through acceptance; what the stages took is released in
// one place (release), whichever stage ended the attempt.
func (s *Supervisor) runAttempt(a *active) {
	ctx := context.Background()
	r := &attemptRun{s: s, a: a, log: s.log.With("job", a.job.ID, "attempt", a.n), sb: s.newAttemptSandbox(a)}
	defer r.release()
	out, record := r.run(ctx)
	switch {
	case !record:
	case out.result == nil:
		s.finish(ctx, a, out)
	default:
		r.kept = s.accept(ctx, attemptResult{a: a, spec: r.spec, prog: r.prog, out: out, work: r.artifactDir(), ours: r.collected != nil, keep: r.sb, log: r.log})
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

func (s *Supervisor) killWorker(w launch.Worker, log interface{ Warn(string, ...any) }) {
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
