package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func newRunCmd(a *app) *cobra.Command {
	var (
		jf jobFlags
		d  daemonFlags
	)
	cmd := &cobra.Command{
		Use:   "run INPUT",
		Short: "Run one job and print its verified result",
		Long: `Run one job with the embedded store and an isolated worker, wait for it,
and print the verified result: the output values on stdout, one per line,
and a summary on stderr. When a daemon owns the home, the job is submitted
to it instead and the output is the same (the daemon's own settings and
limits then apply, not this command's: --isolation required is refused
unless the daemon's workers are jailed, and other settings given are said
not to apply).

Ctrl-C (SIGINT) or SIGTERM cancels the job through the cancellation
protocol and exits 130.

` + inputHelp,
		GroupID: groupDaemon,
		Args:    exactArgs(1, "run needs exactly one INPUT (.nox or bundle .json)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := errors.Join(jf.check(), d.check()); err != nil {
				return err
			}
			return a.run(cmd.Context(), &jf, &d, args[0])
		},
	}
	jf.register(cmd.Flags())
	d.register(cmd.Flags(), false)
	return cmd
}

// exactArgs is cobra.ExactArgs with the command's own message.
func exactArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s", msg)
		}
		return nil
	}
}

func (a *app) run(ctx context.Context, jf *jobFlags, d *daemonFlags, input string) error {
	spec, err := jf.spec(input, a.home)
	if err != nil {
		return a.report("run", nil, err, nil)
	}
	// A daemon owns the home: the job goes to it.
	if dm, err := a.dialDaemon(); err == nil {
		return a.runThroughDaemon(ctx, dm, spec, jf, d)
	}
	log := a.logger("warn")
	if a.json() && a.logLevel.value == "" {
		log = discardLogger
	}
	// The supervisor's own work (cancellation, teardown) must outlive the
	// signal that ends the wait.
	// One job: one worker, started while the job is recorded.
	// The job's wall-clock limit bounds what it waits for from the
	// launch on, the launcher's description of the worker included.
	jobWall := jf.wall.d
	if jobWall == 0 {
		jobWall = d.defaultTime.d
	}
	sup, home, err := d.open(context.WithoutCancel(ctx), a, log, 1, true, jobWall)
	if errors.Is(err, store.ErrLocked) {
		// A daemon started meanwhile.
		if dm, derr := a.dialDaemon(); derr == nil {
			return a.runThroughDaemon(ctx, dm, spec, jf, d)
		}
	}
	if err != nil {
		return a.report("run", nil, err, nil)
	}
	defer sup.Close(context.Background())
	if ctx.Err() != nil {
		return a.report("run", nil, errInterruptedBeforeSubmit, nil)
	}
	sup.Prewarm()
	sup.Start()
	// Not abandoned to a signal once begun: the cancel below then finds
	// the job (a refused submission was context.Canceled, exit 1).
	job, _, err := sup.Submit(context.WithoutCancel(ctx), supervisor.SubmitRequest{Spec: spec, Priority: int32(jf.priority.or(0)), Retry: jf.retryPolicy()})
	if err != nil {
		return a.report("run", nil, err, nil)
	}
	st, err := follow(ctx, func(ctx context.Context, seen string) (*apitypes.JobStatus, error) {
		return localStatus(sup.Wait(ctx, job.ID, seen))
	}, a.progressFor(job.ID))
	if err != nil && ctx.Err() != nil {
		// Interrupted: cancel the job through the protocol and report
		// how it ended.
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sup.Cancel(cctx, job.ID, signalReason)
		st, err = localStatus(sup.WaitEnd(cctx, job.ID))
	}
	if err != nil {
		return a.report("run", nil, err, nil)
	}
	return a.finalReport("run", st, home, ctx.Err() != nil)
}

// localStatus is a job's status read from a supervisor on the home as
// the daemon answers it.
func localStatus(st *supervisor.JobStatus, err error) (*apitypes.JobStatus, error) {
	if err != nil {
		return nil, err
	}
	v := api.JobStatusOf(st)
	return &v, nil
}

// runThroughDaemon is run's job handed to the daemon that owns the home.
func (a *app) runThroughDaemon(ctx context.Context, dm *daemon, spec []byte, jf *jobFlags, d *daemonFlags) error {
	if err := a.handOver(ctx, dm, d); err != nil {
		return a.report("run", nil, err, nil)
	}
	return a.runThrough(ctx, dm, "run", spec, jf, true)
}

// runThrough submits spec to the daemon and, with wait, follows it to
// its end. A signal while waiting cancels the job when cancelOnSignal
// (run), or leaves it running and says so (submit --wait).
func (a *app) runThrough(ctx context.Context, dm *daemon, command string, spec []byte, jf *jobFlags, cancelOnSignal bool) error {
	rep, err := submitToDaemon(ctx, dm, spec, jf)
	if err != nil {
		return a.report(command, nil, err, nil)
	}
	id := rep.Job.JobID
	st, err := follow(ctx, func(ctx context.Context, seen string) (*apitypes.JobStatus, error) {
		return dm.Wait(ctx, id, seen)
	}, a.progressFor(id))
	if err != nil && ctx.Err() != nil {
		if !cancelOnSignal {
			// The job's state now, to say it (the daemon answers at once,
			// or the last state seen stands).
			state := lifecycle.Queued
			if st != nil {
				state = st.Job.State
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if now, serr := dm.Status(sctx, id); serr == nil {
				state = now.Job.State
			}
			cancel()
			return a.report(command, nil, &leavingError{
				msg: fmt.Sprintf("stopped waiting (signal); job %s keeps running, now %s: cancel it with `%s cancel %s`, or see it with `%s status %s`",
					id, state, dm.cli, id, dm.cli, id),
				left: apitypes.Left{JobID: id, State: state}}, nil)
		}
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, cerr := dm.Cancel(cctx, id, signalReason); cerr != nil {
			return a.report(command, nil, dm.err(cerr), nil)
		}
		st, err = dm.WaitEnd(cctx, id)
	}
	if err != nil {
		return a.report(command, nil, dm.followErr(err, id), nil)
	}
	return a.finalReport(command, st, dm.home, ctx.Err() != nil)
}

// errInterruptedBeforeSubmit: a signal came before the job was
// submitted, so nothing was started for it.
var errInterruptedBeforeSubmit = protocol.Errorf(protocol.CodeInterrupted, "by a signal before the job was submitted: nothing was started")

// submitBound bounds a submission to the daemon once it is sent.
const submitBound = time.Minute

// submitToDaemon submits spec unless a signal came first. A submission
// once sent is not abandoned to a signal (within submitBound): the daemon
// may have stored the job already, which would then run on unseen while
// the client reported the daemon unreachable; instead the caller sees
// the job and the signal, and cancels it or says it keeps running.
func submitToDaemon(ctx context.Context, dm *daemon, spec []byte, jf *jobFlags) (*apitypes.SubmitReply, error) {
	if ctx.Err() != nil {
		return nil, errInterruptedBeforeSubmit
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), submitBound)
	defer cancel()
	rep, err := dm.Submit(sctx, spec, int32(jf.priority.or(0)), jf.retryRequest())
	if err != nil {
		return nil, dm.err(err)
	}
	return rep, nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// progressFor shows progress on stderr in human format.
func (a *app) progressFor(id string) *progress {
	if a.json() {
		return newProgress(nil, id)
	}
	return newProgress(a.stderr, id)
}
