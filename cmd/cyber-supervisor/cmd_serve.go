package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
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
	var mf metricsFlags
	var config string
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
once its running attempts have ended.

--config FILE reads these flags from a YAML file (the flags' names as
keys: "slots: 4"); a flag on the command line wins over the file, and the
whole file is checked before anything starts (docs/supervisor.md).

Under systemd (Type=notify) the daemon says READY=1 on $NOTIFY_SOCKET
once its socket answers, and STOPPING=1 when it stops.`,
		GroupID: groupDaemon,
		Args:    noArgs("serve"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if config != "" {
				if err := applyServeConfig(cmd, config); err != nil {
					return err
				}
			}
			if err := d.check(); err != nil {
				return withConfig(err, config)
			}
			if err := af.check(); err != nil {
				return withConfig(err, config)
			}
			if err := mf.check(cmd.Flags()); err != nil {
				return withConfig(err, config)
			}
			if err := checkSocketPath(a.home); err != nil {
				return err
			}
			return a.serve(cmd.Context(), &d, af.cfg, mf.config())
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "read serve's flags from this YAML file (keys: the flags' names; a flag given here wins)")
	d.register(cmd.Flags(), true)
	af.register(cmd.Flags())
	mf.register(cmd.Flags())
	return cmd
}

func (a *app) serve(ctx context.Context, d *daemonFlags, apiCfg api.Config, metricsCfg *api.MetricsConfig) error {
	log := a.logger("info")
	sd := takeNotifySocket()
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
	var metrics *api.MetricsServer
	if metricsCfg != nil {
		if metrics, err = srv.ListenMetrics(*metricsCfg); err != nil {
			srv.Close()
			sup.Close(context.Background())
			return a.report("serve", nil, err, nil)
		}
	}
	if ctx.Err() != nil {
		// Asked to stop while the home was opened and recovered, or while
		// the API was set up: nothing is dispatched, or each queued job
		// would pay an attempt for an interruption a crash at the same
		// moment would not have cost it. Checked here, last before Start,
		// so that nothing but this comparison lies between them.
		log.Info("shutting down: the stop came during the start, nothing was dispatched")
		srv.Close()
		if metrics != nil {
			metrics.Close()
		}
		if cerr := sup.Close(context.Background()); cerr != nil {
			log.Error("close", "err", cerr)
		}
		return nil
	}
	sup.Start()
	// Ready: the socket is bound and listening, so a client's connection
	// waits in its backlog for Serve below instead of being refused.
	a.sayReady(log, sd, sup, home, d.slotCount(), metrics)

	// Said once, when the first actor below ends and the stop begins.
	stopping := sync.OnceFunc(func() {
		if err := sd.notify("STOPPING=1", "STATUS=stopping: no new jobs, interrupting running attempts"); err != nil {
			log.Warn("tell systemd", "err", err)
		}
	})
	var g run.Group
	g.Add(func() error { return srv.Serve() }, func(error) {
		stopping()
		sctx, cancel := context.WithTimeout(context.Background(), apiDrain)
		defer cancel()
		srv.Shutdown(sctx)
	})
	if metrics != nil {
		// Closed at once, after the API's drain (interrupts run in
		// order), during which /healthz says stopping.
		g.Add(func() error { return metrics.Serve() }, func(error) { metrics.Close() })
	}
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
	stopping()
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
