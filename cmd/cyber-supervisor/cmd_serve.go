package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oklog/run"
	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
)

func newServeCmd(a *app) *cobra.Command {
	var d daemonFlags
	var af apiFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: scheduler, workers, API on a unix socket",
		Long: `Run the daemon on the home: the durable store, the slot scheduler, the
isolated workers, and the API on <home>/supervisor.sock (mode 0600, the
owner's uid or root only).

SIGTERM or SIGINT is a clean shutdown: no new jobs, running attempts are
interrupted through the cancellation protocol and queued again for the
next start whatever their retry policy (an interrupted attempt does not
count against it), then the store is closed. SIGHUP (a closed terminal or
SSH session) is logged and ignored: the daemon goes on. drain stops it
once its running attempts have ended.`,
		GroupID: groupDaemon,
		Args:    noArgs("serve"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := d.check(); err != nil {
				return err
			}
			if err := af.check(); err != nil {
				return err
			}
			if err := checkSocketPath(a.home); err != nil {
				return err
			}
			return a.serve(cmd.Context(), &d, af.cfg)
		},
	}
	d.register(cmd.Flags(), true)
	af.register(cmd.Flags())
	return cmd
}

func (a *app) serve(ctx context.Context, d *daemonFlags, apiCfg api.Config) error {
	log := a.logger("info")
	a.hangupMu.Lock()
	a.hangupLog = log
	a.hangupMu.Unlock()
	sup, home, err := d.open(context.WithoutCancel(ctx), a, log, d.pool.or(d.slotCount()), false, 0)
	if err != nil {
		return a.report("serve", nil, err, nil)
	}
	srv, err := api.Listen(sup, supervisor.SocketPath(home), log, apiCfg)
	if err != nil {
		sup.Close(context.Background())
		return a.report("serve", nil, err, nil)
	}
	if ctx.Err() != nil {
		// Asked to stop while the home was opened and recovered, or while
		// the API was set up: nothing is dispatched, or each queued job
		// would pay an attempt for an interruption a crash at the same
		// moment would not have cost it. Checked here, last before Start,
		// so that nothing but this comparison lies between them.
		log.Info("shutting down: the stop came during the start, nothing was dispatched")
		srv.Close()
		if cerr := sup.Close(context.Background()); cerr != nil {
			log.Error("close", "err", cerr)
		}
		return nil
	}
	sup.Start()
	caps := sup.Capabilities()
	log.Info("supervisor serving", "home", home, "socket", supervisor.SocketPath(home), "host", sup.HostID(), "boot", sup.Boot(),
		"generation", sup.Generation(),
		"backend", caps.Backend, "memory_limit", caps.Limits.Memory, "wall_time", caps.Limits.WallTime)

	var g run.Group
	g.Add(func() error { return srv.Serve() }, func(error) {
		sctx, cancel := context.WithTimeout(context.Background(), apiDrain)
		defer cancel()
		srv.Shutdown(sctx)
	})
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	g.Add(func() error {
		<-sigCtx.Done()
		// First, before the API drains (up to apiDrain): an attempt
		// dispatched after the signal would only be interrupted.
		sup.StopDispatching()
		return errShutdown
	}, func(error) { stop() })
	quit := make(chan struct{})
	g.Add(func() error {
		select {
		case err := <-sup.Broken():
			sup.StopDispatching()
			return err
		case <-sup.Drained():
			// The operator's drain is done: stop as on SIGTERM (what
			// still runs is interrupted and queued again).
			return errDrained
		case <-quit:
			return nil
		}
	}, func(error) { close(quit) })
	err = g.Run()
	log.Info("shutting down: no new jobs, interrupting running attempts")
	if cerr := sup.Close(context.Background()); cerr != nil {
		log.Error("close", "err", cerr)
	}
	if err != nil && !errors.Is(err, errShutdown) && !errors.Is(err, errDrained) {
		log.Error("serve", "err", err)
		return exitStatus(protocol.ExitFailed)
	}
	return nil
}

var (
	errShutdown = errors.New("shutdown requested")
	errDrained  = errors.New("drained")
)

// apiDrain bounds the wait for open API requests at a stop.
const apiDrain = 5 * time.Second

// serveStopBound is the longest a stop of serve takes: the API drained,
// running attempts interrupted and given their grace, then killed. The
// systemd unit's TimeoutStopSec is above it (contrib/systemd).
const serveStopBound = apiDrain + supervisor.DefaultShutdownGrace + supervisor.DefaultCancelGrace + supervisor.KillBound
