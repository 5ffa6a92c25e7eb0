package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/oklog/run"
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/sandbox"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
)

// daemonFlags configure a supervisor (serve and run).
type daemonFlags struct {
	worker    string
	isolation string
	slots     int
	pool      int
	cgroup    string
	queue     int
	logLevel  string
}

func (d *daemonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.worker, "worker", "", "nox-worker binary (default: $"+EnvWorker+", beside this binary, $PATH)")
	fs.StringVar(&d.isolation, "isolation", "auto", "auto (isolate when the host can), required, or off")
	fs.IntVar(&d.slots, "slots", runtime.NumCPU(), "attempts running at once")
	fs.IntVar(&d.queue, "queue", 1024, "queued jobs before submissions are refused as busy")
	fs.IntVar(&d.pool, "pool", -1, "workers kept started, jailed and handshaken ahead of time (default: the slots; 0: none)")
	fs.StringVar(&d.cgroup, "cgroup-name", "", "parent cgroup of the workers' groups (default: derived from the home)")
	fs.StringVar(&d.logLevel, "log-level", "info", "debug, info, warn or error")
}

func (d *daemonFlags) logger(c *cli) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(d.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// open starts a supervisor on the home with these flags.
func (d *daemonFlags) open(ctx context.Context, c *cli, log *slog.Logger) (*supervisor.Supervisor, string, error) {
	home, err := supervisor.ResolveHome(c.home)
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, "", fmt.Errorf("create home %s: %w", home, err)
	}
	worker, err := findWorker(d.worker)
	if err != nil {
		return nil, "", err
	}
	var iso supervisor.Isolation
	switch d.isolation {
	case "auto":
		iso = supervisor.IsolationAuto
	case "required":
		iso = supervisor.IsolationRequired
	case "off":
		iso = supervisor.IsolationOff
	default:
		return nil, "", fmt.Errorf("--isolation must be auto, required or off")
	}
	tuneGC()
	// Workers must not inherit stray descriptors, and orphans of a killed
	// worker tree are reaped here, not by a lazy PID 1.
	unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err := sandbox.BecomeSubreaper(); err != nil {
		log.Warn("cannot become child subreaper", "err", err)
	}
	lcfg := supervisor.LauncherConfig{WorkerPath: worker, Home: home, Isolation: iso, CgroupName: d.cgroup, PoolSize: d.poolSize(), Logger: log}
	// The launcher (cgroups, sockets, a described worker) is made only
	// once the store has opened cleanly.
	newLauncher := func(ctx context.Context) (supervisor.Launcher, error) {
		l, err := supervisor.NewLauncher(ctx, lcfg)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	sup, err := supervisor.Open(ctx, supervisor.Config{Home: home, Slots: d.slots, QueueLimit: d.queue, NewLauncher: newLauncher, Logger: log})
	if err != nil {
		return nil, "", err
	}
	return sup, home, nil
}

// daemonGCPercent is the supervisor's GOGC unless the operator sets one.
// Its live heap is small (3 MB at 100 jobs/s), so at the default 100 % it
// collected every ~40 ms under load, each cycle stopping the world while
// workers ran on the same cores; 400 % costs ~12 MB of heap and measured
// 0.3-1.5 ms less supervisor CPU per trivial job.
const daemonGCPercent = 400

func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(daemonGCPercent)
	}
}

func (d *daemonFlags) poolSize() int {
	if d.pool < 0 {
		return d.slots
	}
	return d.pool
}

func (c *cli) serve(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var d daemonFlags
	d.register(fs)
	if _, ok := parseFlags(fs, args, c.stderr); !ok {
		return exitUsage
	}
	log, err := d.logger(c)
	if err != nil {
		return usageErr(c.stderr, "%v", err)
	}
	sup, home, err := d.open(ctx, c, log)
	if err != nil {
		fmt.Fprintf(c.stderr, "cyber-supervisor serve: %v\n", err)
		return exitFor(err)
	}
	srv, err := api.Listen(sup, supervisor.SocketPath(home), log)
	if err != nil {
		sup.Close(context.Background())
		fmt.Fprintf(c.stderr, "cyber-supervisor serve: %v\n", err)
		return exitFailed
	}
	caps := sup.Capabilities()
	log.Info("supervisor serving", "home", home, "socket", supervisor.SocketPath(home), "boot", sup.Boot(),
		"backend", caps.Backend, "memory_limit", caps.Limits.Memory, "wall_time", caps.Limits.WallTime)
	sup.Start()

	var g run.Group
	g.Add(func() error { return srv.Serve() }, func(error) {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	})
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	g.Add(func() error { <-sigCtx.Done(); return errShutdown }, func(error) { stop() })
	err = g.Run()
	log.Info("shutting down: no new jobs, finishing or cancelling running attempts")
	cerr := sup.Close(context.Background())
	if cerr != nil {
		log.Error("close", "err", cerr)
	}
	if err != nil && !errors.Is(err, errShutdown) {
		log.Error("serve", "err", err)
		return exitFailed
	}
	return exitOK
}

var errShutdown = errors.New("shutdown requested")
