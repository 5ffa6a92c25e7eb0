package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// attemptRun is one attempt on its way through its stages: the frozen
// spec, the sandbox, the launch, the dispatch checks and the run. Each
// stage either hands the attempt on or ends it with an outcome; what the
// stages took (the worker, its work dir, the sandbox) is given back by
// closeWorker and release alone, not by each stage that can fail.
type attemptRun struct {
	s   *Supervisor
	a   *active
	log *slog.Logger

	spec *protocol.JobSpec
	prog *savedProgram
	sb   *attemptSandbox
	// w is the attempt's worker from its launch until closeWorker.
	w launch.Worker
	// work is where the worker writes: a work dir of its own (ownWork,
	// closed by release) or the sandbox.
	work    *artifacts.Dir
	ownWork bool
	// stream takes a jailed prove's certificate to the sandbox as it is
	// written (nil: none); collected is the sandbox when it holds the
	// certificate it published, where acceptance reads it; gone is
	// closed once the worker is.
	stream    *artifactStream
	collected *artifacts.Dir
	// feed gives a verify job by reference its certificate (nil: none).
	feed *artifacts.FeedCopy
	gone chan struct{}
	// start is the launch, from which the wall-clock limit runs to
	// deadline (zero: none).
	start, deadline time.Time
	// driven: the worker was given the job (drive ran).
	driven bool
	// kept: acceptance kept the sandbox (it holds the certificate).
	kept bool
}

// run takes the attempt through its stages. It reports the outcome and
// whether it is recorded: an attempt whose registration was lost is the
// other hosts' to recover, and this boot records nothing of it.
func (r *attemptRun) run(ctx context.Context) (outcome, bool) {
	if out, ended := r.load(); ended {
		return out, true
	}
	if out, ended := r.prepareSandbox(); ended {
		return out, true
	}
	if r.s.fenced() {
		// The registration is lost: this boot dispatches nothing.
		return outcome{}, false
	}
	if out, ended := r.launch(ctx); ended {
		return out, true
	}
	out, record := r.dispatch(ctx)
	if r.feed != nil {
		// The worker answered or is gone: it reads no more.
		r.feed.Stop()
	}
	r.closeWorker(ctx, &out)
	if r.stream != nil {
		r.collected = r.stream.end(ctx, &out, r.gone, r.sb.dir)
	}
	return out, record
}

// artifactDir is where acceptance reads the certificate: the sandbox the
// stream published it in, or the worker's work dir.
func (r *attemptRun) artifactDir() *artifacts.Dir {
	if r.collected != nil {
		return r.collected
	}
	return r.work
}

// load reads the frozen spec back; a cancel that came meanwhile ends the
// attempt before anything is made for it.
func (r *attemptRun) load() (outcome, bool) {
	var err error
	if r.spec, r.prog, err = r.s.frozenSpec(r.a); err != nil {
		// The spec was admitted and frozen: failing to read it back is
		// the store's fault, not the job's.
		return outcome{err: protocol.Errorf(protocol.CodeInternalError, "read frozen spec: %v", err), state: lifecycle.Failed}, true
	}
	if r.a.cancelled() {
		return r.s.stoppedOutcome(r.a, "", "before launch"), true
	}
	return outcome{}, false
}

// prepareSandbox makes the attempt's sandbox when the worker works in it.
// A jailed worker writes to a tmpfs of its own; the sandbox then only
// receives a prove's certificate (openArtifactStream), and is made then.
func (r *attemptRun) prepareSandbox() (outcome, bool) {
	if r.s.launchCaps.OwnWorkDirs {
		return outcome{}, false
	}
	dir, err := r.sb.open()
	if err != nil {
		return outcome{err: protocol.Errorf(protocol.CodeIOError, "create sandbox: %v", err), state: lifecycle.Failed}, true
	}
	r.work = dir
	return outcome{}, false
}

// launch starts the worker. The wall-clock limit runs from here: whatever
// the attempt waits for from now on (the worker's handshake, its
// acceptance of the job, its result) ends at the deadline.
func (r *attemptRun) launch(ctx context.Context) (outcome, bool) {
	r.start = time.Now()
	if ms := r.spec.Limits.WallTimeMS; ms > 0 {
		r.deadline = r.start.Add(time.Duration(ms) * time.Millisecond)
	}
	req := launch.Request{Job: r.a.job.ID, Attempt: r.a.n, Limits: r.spec.Limits}
	if r.work != nil {
		req.WorkDir = r.work.Path()
	}
	w, err := r.s.launch(ctx, req, r.deadline)
	if err != nil {
		r.log.Warn("launch failed", "err", err)
		out := outcome{err: launchError(err), state: lifecycle.Failed, wall: time.Since(r.start), hostile: errors.Is(err, launch.ErrHostileWorker)}
		if !r.deadline.IsZero() && !time.Now().Before(r.deadline) {
			out.err, out.killedBy = wallLimitExceeded(r.spec), "deadline"
		}
		return out, true
	}
	r.w = w
	return outcome{}, false
}

// dispatch gives the launched worker the job once everything that must
// hold before it does holds: its work dir opens, the placement did not
// move, the attempt is recorded running and the registration stands.
func (r *attemptRun) dispatch(ctx context.Context) (outcome, bool) {
	work, err := r.w.Files()
	if err == nil && work == nil && r.work == nil {
		err = errors.New("the launcher gave the worker no work dir")
	}
	if err != nil {
		return outcome{err: protocol.Errorf(protocol.CodeIOError, "open the worker's work dir: %v", err), state: lifecycle.Failed}, true
	}
	if work != nil {
		r.work, r.ownWork = work, true
		if r.spec.Operation == protocol.OpProve {
			// A jailed worker's work dir is a small tmpfs charged to its
			// memory: its certificate goes to the sandbox on disk.
			w := r.w
			if perr := r.openArtifactStream(func() { w.Kill(context.Background()) }); perr != nil {
				return outcome{err: perr, state: lifecycle.Failed}, true
			}
		}
	}
	if r.spec.Operation == protocol.OpVerify && r.spec.ArtifactRef != nil {
		// The certificate is in the home's store: the worker reads it
		// from a feed in its work dir, jailed or not.
		if perr := r.openCertificateFeed(); perr != nil {
			return outcome{err: perr, state: lifecycle.Failed}, true
		}
	}
	// The attempt's claim was made with it; an attempt of an older
	// generation than the current placement is never dispatched.
	if moved, err := r.s.placementMoved(ctx, r.a); err != nil || moved {
		out := outcome{err: protocol.Errorf(protocol.CodeStaleState, "the placement generation moved since the attempt was prepared: it is not dispatched"), state: lifecycle.Failed}
		if err != nil {
			out.err = protocol.Errorf(protocol.CodeInternalError, "read the placement: %v", err)
		}
		r.log.Warn("attempt not dispatched", "err", out.err)
		return out, true
	}
	if err := r.s.transition(ctx, r.a, lifecycle.Running, "worker launched", func(at *store.Attempt, when time.Time) { at.Started = when }); err != nil {
		// Not recorded as running: the job is not given to the worker,
		// whatever stopped the record (a lost registration, or another
		// host that recovered the attempt meanwhile). It never ran: a
		// failure its job's policy may retry (a record refused because
		// the attempt ended elsewhere is refused again, and logged).
		r.log.Error("record running: the worker is not given the job", "err", err)
		return outcome{err: protocol.Errorf(protocol.CodeInternalError, "record the attempt as running: %v", err), state: lifecycle.Failed}, !errors.Is(err, store.ErrFenced)
	}
	if r.s.hooks.afterRunning != nil {
		r.s.hooks.afterRunning(r.a.job.ID, r.a.n)
	}
	// The record committed while the registration stood. A host paused
	// between that commit and here (SIGSTOP, a stall) may have lost it
	// since, and the attempt be another host's to recover by now: the job
	// goes to the worker only while the lease's deadline has not passed.
	// (What is left is the time from this check to the worker's Start.)
	if !r.s.registrationStands(r.a) {
		r.log.Error("the registration was lost after the running record: the worker is not given the job")
		return outcome{}, false
	}
	r.driven = true
	return r.s.drive(r.a, r.spec, r.w, r.deadline, r.log), true
}

// closeWorker is where the worker is closed, whichever stage ended the
// attempt. For a driven attempt what the host learns there decides over
// what the worker said: the cgroup about memory, the work dir's file
// system about its size.
func (r *attemptRun) closeWorker(ctx context.Context, out *outcome) {
	w := r.w
	if w == nil {
		return
	}
	r.w = nil
	r.gone = make(chan struct{})
	if !r.driven {
		if _, err := w.Close(ctx); err != nil {
			r.log.Warn("worker cleanup", "err", err)
		}
		close(r.gone)
		return
	}
	var full bool
	var bound int64
	if out.result != nil {
		full, bound = w.WorkDirFull()
		// A result is in hand: whether the worker is OOM-killed now changes
		// nothing (the result is verified on its own), so its teardown —
		// kill, reap, cgroup removal, ~10-20 ms — leaves the attempt's
		// critical path. Close still runs before the supervisor closes.
		out.wall = time.Since(r.start)
		out.exit.Usage = w.Usage()
		r.s.teardowns.Add(1)
		go func() {
			defer r.s.teardowns.Done()
			if _, err := w.Close(context.Background()); err != nil {
				r.log.Warn("worker cleanup", "err", err)
			}
			close(r.gone)
		}()
	} else {
		exit, err := w.Close(ctx)
		if err != nil {
			r.log.Warn("worker cleanup", "err", err)
		}
		close(r.gone)
		out.exit, out.wall = exit, time.Since(r.start)
		full, bound = w.WorkDirFull()
	}
	r.s.metrics.attemptDone(out.wall, out.killedBy != "", out.exit.OOMKilled)
	if out.exit.OOMKilled {
		out.result, out.state = nil, lifecycle.Failed
		out.err = protocol.Errorf(protocol.CodeMemoryExhausted, "the worker exceeded its memory limit of %d bytes", r.spec.Limits.MemoryBytes)
	}
	if full {
		out.result, out.state = nil, lifecycle.Failed
		out.err = protocol.Errorf(protocol.CodeArtifactTooLarge,
			"the worker filled its work dir (%d bytes: the artifact limit and a margin)", bound)
	}
	if out.result == nil && out.err != nil && out.state == lifecycle.Failed {
		*out = r.s.judgeFailure(r.spec, r.prog, *out)
	}
}

// release gives back the worker's own work dir and the sandbox: the
// sandbox is removed unless acceptance kept it, then its descriptor
// closed (what it holds stays).
func (r *attemptRun) release() {
	if r.w != nil {
		// Only a panic in a stage gets here with a worker.
		r.w.Close(context.Background())
	}
	if r.stream != nil && r.collected == nil {
		r.stream.discard()
	}
	if r.feed != nil {
		r.feed.Stop()
	}
	if r.ownWork {
		r.work.Close()
	}
	if !r.kept {
		r.sb.discard()
	}
	r.sb.close()
}
