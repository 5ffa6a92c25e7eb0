package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// outcome is how an attempt's run ended, before acceptance.
type outcome struct {
	result   *protocol.Result
	err      *protocol.Error
	state    lifecycle.State // failed or cancelled when err != nil
	killedBy string          // deadline, cancel, shutdown
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
		s.finish(ctx, a, outcome{err: protocol.Errorf(protocol.CodeCancelled, "cancelled before launch"), state: lifecycle.Cancelled})
		return
	}
	dir, err := s.sandboxes.Create(a.job.ID, a.n)
	if err != nil {
		s.finish(ctx, a, outcome{err: protocol.Errorf(protocol.CodeIOError, "create sandbox: %v", err), state: lifecycle.Failed})
		return
	}
	defer dir.Close()
	start := time.Now()
	w, err := s.cfg.Launcher.Launch(ctx, LaunchRequest{Job: a.job.ID, Attempt: a.n, Limits: spec.Limits, WorkDir: dir.Path()})
	if err != nil {
		log.Warn("launch failed", "err", err)
		s.finish(ctx, a, outcome{err: launchError(err), state: lifecycle.Failed, wall: time.Since(start),
			hostile: errors.Is(err, ErrHostileWorker)})
		s.discardSandbox(dir)
		return
	}
	// Reopen the sandbox: a warm worker's launch swaps its own (already
	// mounted) dir into the attempt's place.
	dir.Close()
	if dir, err = s.sandboxes.Open(a.job.ID, a.n); err != nil {
		w.Close(ctx)
		s.finish(ctx, a, outcome{err: protocol.Errorf(protocol.CodeIOError, "reopen sandbox: %v", err), state: lifecycle.Failed})
		return
	}
	defer dir.Close()
	// The claim before the worker is given the job: for the generation
	// the attempt was prepared in, only while it is still current.
	if err := s.claimAndRun(ctx, a, spec); err != nil {
		log.Warn("attempt not dispatched", "err", err)
		w.Close(ctx)
		out := outcome{err: protocol.Errorf(protocol.CodeInternalError, "record the attempt's claim: %v", err), state: lifecycle.Failed}
		if errors.Is(err, store.ErrConflict) {
			out.err = protocol.Errorf(protocol.CodeStaleState, "the placement generation moved since the attempt was prepared: it is not dispatched")
		}
		s.finish(ctx, a, out)
		s.discardSandbox(dir)
		return
	}
	out := s.drive(a, spec, w, log)
	if out.result != nil {
		// A result is in hand: whether the worker is OOM-killed now changes
		// nothing (the result is verified on its own), so its teardown —
		// kill, reap, cgroup removal, ~10-20 ms — leaves the attempt's
		// critical path. Close still runs before the supervisor closes.
		out.wall = time.Since(start)
		out.exit.PeakMemory = w.PeakMemory()
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
	}
	s.metrics.attemptDone(out.wall, out.killedBy != "", out.exit.OOMKilled)
	// The cgroup decides about memory, whatever the worker said.
	if out.exit.OOMKilled {
		out.result, out.state = nil, lifecycle.Failed
		out.err = protocol.Errorf(protocol.CodeMemoryExhausted, "the worker exceeded its memory limit of %d bytes", spec.Limits.MemoryBytes)
	}
	if out.result == nil {
		s.finish(ctx, a, out)
		s.discardSandbox(dir)
		return
	}
	keep := s.accept(ctx, a, spec, prog, out, dir, log)
	if !keep {
		s.discardSandbox(dir)
	}
}

// drive runs the worker protocol, the wall-clock deadline and the
// cancellation protocol for one attempt.
func (s *Supervisor) drive(a *active, spec *protocol.JobSpec, w Worker, log interface {
	Warn(string, ...any)
	Info(string, ...any)
}) outcome {
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	run, err := w.Client().Start(runCtx, protocol.RunRequest{JobSpec: a.spec, Attempt: a.n, WorkDir: w.WorkDir()})
	if err != nil {
		return outcome{err: protocol.AsError(err), state: lifecycle.Failed}
	}
	var deadline <-chan time.Time
	if ms := spec.Limits.WallTimeMS; ms > 0 {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		deadline = t.C
	}
	cancelCh := a.cancelCh
	var grace <-chan time.Time
	killedBy := ""
	for {
		select {
		case <-run.Done():
			res, err := run.Wait(context.Background())
			if killedBy != "" || a.cancelled() {
				// A result after a cancel request or a kill is late:
				// discarded, whatever it says.
				if err == nil {
					log.Info("late result discarded", "reason", "cancelled")
					s.event(a, "late result discarded after cancellation")
				}
				return s.cancelledOutcome(a, killedBy)
			}
			if err != nil {
				return outcome{err: protocol.AsError(err), state: lifecycle.Failed}
			}
			return outcome{result: &res}
		case <-deadline:
			killedBy = "deadline"
			s.killWorker(w, log)
			return outcome{err: protocol.Errorf(protocol.CodeDeadlineExceeded, "wall-clock limit of %d ms exceeded", spec.Limits.WallTimeMS), state: lifecycle.Failed, killedBy: killedBy}
		case <-cancelCh:
			cancelCh = nil
			ackCtx, cancelAck := context.WithTimeout(context.Background(), s.cfg.AckWait*5)
			acked, err := run.Cancel(ackCtx, a.reason)
			cancelAck()
			if acked {
				s.recordAck(a)
			} else {
				log.Warn("cancel not acknowledged", "err", err)
			}
			t := time.NewTimer(s.cfg.CancelGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			killedBy = "cancel"
			s.killWorker(w, log)
			return s.cancelledOutcome(a, killedBy)
		case <-a.killCh:
			killedBy = "shutdown"
			s.killWorker(w, log)
			return s.cancelledOutcome(a, killedBy)
		}
	}
}

// stopped is the outcome of an attempt that was cancelled (by a user or by
// the supervisor's shutdown) or killed.
func (s *Supervisor) cancelledOutcome(a *active, killedBy string) outcome {
	msg := "cancelled"
	if a.reason != "" {
		msg = "cancelled: " + a.reason
	}
	return outcome{err: protocol.Errorf(protocol.CodeCancelled, "%s", msg), state: lifecycle.Cancelled, killedBy: killedBy}
}

func (s *Supervisor) killWorker(w Worker, log interface{ Warn(string, ...any) }) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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

func (s *Supervisor) discardSandbox(dir *artifacts.Dir) {
	if err := dir.Remove(); err != nil && !errors.Is(err, artifacts.ErrNotFound) {
		s.log.Warn("remove sandbox", "dir", dir.Path(), "err", err)
	}
}

// transition moves the attempt (and mirrors the job's state) in one
// transaction, with an event.
func (s *Supervisor) transition(ctx context.Context, a *active, to lifecycle.State, reason string, edit func(*store.Attempt)) error {
	defer s.changes.notify(a.job.ID)
	return s.store.Update(ctx, func(tx store.Tx) error {
		at, err := tx.Attempt(a.job.ID, a.n)
		if err != nil {
			return err
		}
		from := at.State
		at.State = to
		if edit != nil {
			edit(at)
		}
		if err := tx.PutAttempt(at); err != nil {
			return err
		}
		job, err := tx.Job(a.job.ID)
		if err != nil {
			return err
		}
		job.State, job.Updated = to, s.now()
		if err := tx.PutJob(job); err != nil {
			return err
		}
		return tx.AppendEvent(store.Event{Job: a.job.ID, Time: s.now(), Attempt: a.n, From: from, To: to, Reason: reason})
	})
}

// claimAndRun records the attempt's claim and moves it to running, in one
// transaction, with an event naming the generation.
func (s *Supervisor) claimAndRun(ctx context.Context, a *active, spec *protocol.JobSpec) error {
	claim, err := s.jobClaim(ctx, a, spec)
	if err != nil {
		return err
	}
	defer s.changes.notify(a.job.ID)
	return s.store.Update(ctx, func(tx store.Tx) error {
		if err := tx.RecordJobClaim(claim); err != nil {
			return err
		}
		at, err := tx.Attempt(a.job.ID, a.n)
		if err != nil {
			return err
		}
		from := at.State
		at.State, at.Started = lifecycle.Running, s.now()
		if err := tx.PutAttempt(at); err != nil {
			return err
		}
		job, err := tx.Job(a.job.ID)
		if err != nil {
			return err
		}
		job.State, job.Updated = lifecycle.Running, s.now()
		if err := tx.PutJob(job); err != nil {
			return err
		}
		return tx.AppendEvent(store.Event{Job: a.job.ID, Time: s.now(), Attempt: a.n, From: from, To: lifecycle.Running,
			Reason: fmt.Sprintf("worker launched; claimed at generation %d", claim.Generation)})
	})
}

// event records a note about an attempt without a state change. Notes
// are not worth waiting for space (the run loop calls this): a failed one
// is logged and dropped.
func (s *Supervisor) event(a *active, reason string) {
	err := s.store.Update(clientWrite(context.Background()), func(tx store.Tx) error {
		at, err := tx.Attempt(a.job.ID, a.n)
		if err != nil {
			return err
		}
		return tx.AppendEvent(store.Event{Job: a.job.ID, Time: s.now(), Attempt: a.n, From: at.State, To: at.State, Reason: reason})
	})
	if err != nil {
		s.log.Warn("record event", "job", a.job.ID, "err", err)
	}
}

func (s *Supervisor) recordAck(a *active) {
	// Called from the run loop, which must go on to the grace's kill: a
	// full disk costs the note, not the deadline.
	err := s.store.Update(clientWrite(context.Background()), func(tx store.Tx) error {
		at, err := tx.Attempt(a.job.ID, a.n)
		if err != nil {
			return err
		}
		at.CancelAcked = s.now()
		if err := tx.PutAttempt(at); err != nil {
			return err
		}
		return tx.AppendEvent(store.Event{Job: a.job.ID, Time: s.now(), Attempt: a.n, From: at.State, To: at.State, Reason: "cancel acknowledged by the worker"})
	})
	if err != nil {
		s.log.Warn("record cancel acknowledgement", "job", a.job.ID, "err", err)
	}
	a.acknowledged()
}

// finish ends a failed or cancelled attempt and decides whether the job
// gets another attempt.
func (s *Supervisor) finish(ctx context.Context, a *active, out outcome) {
	defer s.changes.notify(a.job.ID)
	retried := false
	err := s.store.Update(ctx, func(tx store.Tx) error {
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
		at.Telemetry = store.Telemetry{WallTime: out.wall, PeakMemory: out.exit.PeakMemory, Killed: out.killedBy, OOM: out.exit.OOMKilled}
		if err := tx.PutAttempt(at); err != nil {
			return err
		}
		reason := fmt.Sprintf("%s: %s", out.err.Code, out.err.Message)
		if err := tx.AppendEvent(store.Event{Job: job.ID, Time: now, Attempt: a.n, From: from, To: out.state, Reason: reason}); err != nil {
			return err
		}
		job.Updated = now
		if out.state != lifecycle.Cancelled && !job.CancelRequested && !out.hostile && s.mayRetry(job, out.err) {
			job.State = lifecycle.Queued
			job.NotBefore = now.Add(backoff(job.Retry, job.Attempts))
			if err := tx.PutJob(job); err != nil {
				return err
			}
			if err := tx.Enqueue(job.ID, job.Priority, job.Seq); err != nil {
				return err
			}
			retried = true
			return tx.AppendEvent(store.Event{Job: job.ID, Time: now, From: out.state, To: lifecycle.Queued,
				Reason: fmt.Sprintf("retry %d of %d after %s", job.Attempts+1, job.Retry.MaxAttempts, job.NotBefore.Sub(now))})
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
		s.log.Error("attempt ended on an I/O failure", "job", a.job.ID, "attempt", a.n, "state", out.state, "err", out.err.Message)
		return
	}
	s.log.Info("attempt ended", "job", a.job.ID, "attempt", a.n, "state", out.state, "code", out.err.Code)
}

// mayRetry applies the job's retry policy to a failed attempt.
func (s *Supervisor) mayRetry(job *store.Job, e *protocol.Error) bool {
	if job.Attempts >= job.Retry.MaxAttempts {
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
