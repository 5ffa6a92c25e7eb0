package supervisor

import (
	"context"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// launch starts the attempt's worker within its deadline (zero: none),
// which bounds the worker's handshake.
func (s *Supervisor) launch(ctx context.Context, req launch.Request, deadline time.Time) (launch.Worker, error) {
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	return s.cfg.Launcher.Launch(ctx, req)
}

// wallLimitExceeded is the error of an attempt stopped at its deadline.
func wallLimitExceeded(spec *protocol.JobSpec) *protocol.Error {
	return protocol.Errorf(protocol.CodeDeadlineExceeded, "wall-clock limit of %d ms exceeded", spec.Limits.WallTimeMS)
}

// started is what the start of a run came to.
type started struct {
	run launch.Run
	err error
}

// drive runs the worker protocol, the wall-clock deadline (set at the
// launch; zero for none) and the cancellation protocol for one attempt.
// The start, which waits for the worker's connection and its acceptance
// of the job, runs on a goroutine of its own, so that the deadline, a
// cancel and a kill end a worker that never answers as they end one that
// never finishes (issue #26: a silent worker held a run for two gRPC
// connection timeouts, ~40 s, whatever its limit).
func (s *Supervisor) drive(a *active, spec *protocol.JobSpec, w launch.Worker, deadline time.Time, log interface {
	Warn(string, ...any)
	Info(string, ...any)
}) outcome {
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	var timeUp <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeUp = t.C
	}
	starting := make(chan started, 1) // the goroutine never waits for drive
	go func() {
		run, err := w.Start(runCtx, protocol.RunRequest{JobSpec: a.spec, Attempt: a.n, WorkDir: w.WorkDir()})
		starting <- started{run, err}
	}()
	var (
		run      launch.Run
		runDone  <-chan struct{}
		cancelCh = a.cancelCh
		grace    <-chan time.Time
		killedBy string
	)
	for {
		select {
		case st := <-starting:
			starting = nil
			if st.err != nil {
				if a.cancelled() {
					return s.stoppedOutcome(a, killedBy, "")
				}
				return outcome{err: protocol.AsError(st.err), state: lifecycle.Failed}
			}
			run, runDone = st.run, st.run.Done()
			if grace != nil {
				// A cancel came while the worker was starting the
				// run: it is asked now; the grace runs from the
				// request.
				s.askCancel(a, run, log)
			}
		case <-runDone:
			res, err := run.Wait(context.Background())
			if _, shutdown := a.cancelInfo(); err == nil && killedBy == "" && shutdown {
				// The supervisor is stopping, nobody cancelled the job:
				// a result that made it is accepted, not thrown away.
				return outcome{result: &res}
			}
			if killedBy != "" || a.cancelled() {
				// A result after a cancel request or a kill is late:
				// discarded, whatever it says.
				if err == nil {
					log.Info("late result discarded", "reason", "cancelled")
					s.event(a, "late result discarded after cancellation")
				}
				return s.stoppedOutcome(a, killedBy, "")
			}
			if err != nil {
				return outcome{err: protocol.AsError(err), state: lifecycle.Failed}
			}
			return outcome{result: &res}
		case <-timeUp:
			killedBy = "deadline"
			s.killWorker(w, log)
			return outcome{err: wallLimitExceeded(spec), state: lifecycle.Failed, killedBy: killedBy}
		case <-cancelCh:
			cancelCh = nil
			if run != nil {
				s.askCancel(a, run, log)
			}
			t := time.NewTimer(s.cfg.CancelGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			killedBy = "cancel"
			if a.shutdown {
				killedBy = "shutdown"
			}
			s.killWorker(w, log)
			return s.stoppedOutcome(a, killedBy, "")
		case <-a.killCh:
			killedBy = "shutdown"
			s.killWorker(w, log)
			return s.stoppedOutcome(a, killedBy, "")
		}
	}
}

// askCancel sends the cancel request through the protocol and records
// its acknowledgement, waiting for it a little.
func (s *Supervisor) askCancel(a *active, run launch.Run, log interface{ Warn(string, ...any) }) {
	ackCtx, cancelAck := context.WithTimeout(context.Background(), s.cfg.AckWait*5)
	acked, err := run.Cancel(ackCtx, a.reason)
	cancelAck()
	if acked {
		s.recordAck(a)
	} else {
		log.Warn("cancel not acknowledged", "err", err)
	}
}
