package main

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/sandbox"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// daemonFlags configure a supervisor (serve and run).
type daemonFlags struct {
	worker    string
	isolation *enumValue
	slots     *intRange
	pool      *intRange
	queue     *intRange
	retries   *intRange // --default-retries
	cgroup    string
	cluster   clusterFlags
	fs        *pflag.FlagSet

	defaultMemory, maxMemory sizeValue
	defaultTime, maxTime     limitDuration
	retain                   retentionValue
}

// Bounds of the daemon's sizes: far above what one host runs, low enough
// that a typo is refused instead of allocating for it.
const (
	maxSlots = 1024
	maxQueue = 1 << 20
)

// register adds the flags of a supervisor; the daemon's (serve) add
// slots, queue and warm pool, which one job (run) has no use for.
func (d *daemonFlags) register(fs *pflag.FlagSet, daemon bool) {
	d.isolation = newEnum("auto", "auto", "required", "off")
	d.slots = newIntRange(1, maxSlots)
	d.pool = newIntRange(0, maxSlots)
	d.queue = newIntRange(1, maxQueue)
	d.retries = newIntRange(0, supervisor.MaxAttemptsLimit-1)
	fs.StringVar(&d.worker, "worker", "", "nox-worker binary (default: $"+EnvWorker+", then beside this binary, then $PATH)")
	fs.Var(d.isolation, "isolation", "auto (isolate when the host can), required (refuse to start otherwise), or off")
	fs.StringVar(&d.cgroup, "cgroup-name", "", "parent cgroup of the workers' groups (default: derived from the home)")
	d.fs = fs
	fs.Var(&d.defaultMemory, "default-memory", "memory limit of a job that asks for none, where memory limits are enforced (default: half the host's memory divided by the slots)")
	fs.Var(&d.defaultTime, "default-time", "wall-clock limit of a job that asks for none (default: 1h)")
	fs.Var(&d.maxMemory, "max-memory", "refuse a job that asks for more memory, with unsupported_limit (default: the host's memory)")
	fs.Var(&d.maxTime, "max-time", "refuse a job that asks for a longer wall-clock limit, with unsupported_limit (default: 168h)")
	if daemon {
		d.cluster.register(fs)
		fs.Var(&d.retain, "retain", "remove ended jobs (never unknown ones) and their sandboxes this long after they ended, keeping tombstones, e.g. 720h (default: keep everything)")
		fs.Var(d.slots, "slots", "attempts running at once (default: the number of CPUs)")
		fs.Var(d.queue, "queue", "queued jobs before submissions are refused as busy (default: 1024)")
		fs.Var(d.retries, "default-retries", "retries of a job submitted without --retries (max_attempts), after a retryable failure (default: 0); an attempt a stop interrupts is queued again whatever the policy")
		fs.Var(d.pool, "pool", "workers kept started, jailed and handshaken ahead of time, at most the slots (default: the slots; 0: none)")
	} else {
		d.slots.v, d.slots.set = 1, true
	}
}

func (d *daemonFlags) slotCount() int { return d.slots.or(runtime.NumCPU()) }

// check refuses combinations before anything starts.
func (d *daemonFlags) check() error {
	if d.pool.set && d.pool.v > d.slotCount() {
		return usagef("--pool %d: at most the slots (%d); a warm worker beyond them would never be used", d.pool.v, d.slotCount())
	}
	for _, m := range []struct {
		name string
		v    uint64
	}{{"--default-memory", d.defaultMemory.bytes}, {"--max-memory", d.maxMemory.bytes}} {
		if m.v != 0 && m.v < supervisor.MinWorkerMemory {
			return usagef("%s %s: below the %s a worker needs to start", m.name, protocol.FormatBytes(m.v), protocol.FormatBytes(supervisor.MinWorkerMemory))
		}
	}
	if d.defaultMemory.bytes != 0 && d.maxMemory.bytes != 0 && d.defaultMemory.bytes > d.maxMemory.bytes {
		return usagef("--default-memory %s is above --max-memory %s", protocol.FormatBytes(d.defaultMemory.bytes), protocol.FormatBytes(d.maxMemory.bytes))
	}
	if d.defaultTime.d != 0 && d.maxTime.d != 0 && d.defaultTime.d > d.maxTime.d {
		return usagef("--default-time %s is above --max-time %s", d.defaultTime.d, d.maxTime.d)
	}
	// Against the built-in ceilings too, which the supervisor would
	// refuse them by once started (an internal_error, after the home is
	// made, that a unit's Restart=on-failure would repeat).
	if d.maxMemory.bytes == 0 && d.defaultMemory.bytes > supervisor.HostMemory() {
		return usagef("--default-memory %s is above the host's memory %s (the ceiling without --max-memory)", protocol.FormatBytes(d.defaultMemory.bytes), protocol.FormatBytes(supervisor.HostMemory()))
	}
	if d.maxTime.d == 0 && d.defaultTime.d > supervisor.MaxWallTime {
		return usagef("--default-time %s is above %s (the ceiling without --max-time)", d.defaultTime.d, supervisor.MaxWallTime)
	}
	if d.cgroup != "" {
		if err := limits.ValidName(d.cgroup); err != nil {
			return usagef("--cgroup-name: %v", err)
		}
	}
	if d.worker != "" {
		if st, err := os.Stat(d.worker); err != nil || !st.Mode().IsRegular() {
			return usagef("--worker %s: not a nox-worker binary (no regular file there)", d.worker)
		}
	}
	return d.cluster.check(d.fs)
}

// operatorLimits are the flags' limits; zero fields take the built-ins.
func (d *daemonFlags) operatorLimits() supervisor.OperatorLimits {
	return supervisor.OperatorLimits{DefaultMemory: d.defaultMemory.bytes, DefaultWallTime: d.defaultTime.d,
		MaxMemory: d.maxMemory.bytes, MaxWallTime: d.maxTime.d}
}

func (d *daemonFlags) isolationMode() launch.Isolation {
	switch d.isolation.value {
	case "required":
		return launch.IsolationRequired
	case "off":
		return launch.IsolationOff
	}
	return launch.IsolationAuto
}

// open starts a supervisor on the home with these flags; pool is the
// warm pool's size. oneShot is run's supervisor: one job, whose worker
// starts (sup.Prewarm) while the job is recorded, and whose states are
// recorded together (supervisor.Config.OneShot); its job's wall-clock
// limit, jobWall (0: none given), then bounds the launcher's description
// of the worker too (LauncherConfig.DescribeTimeout).
func (d *daemonFlags) open(ctx context.Context, a *app, log *slog.Logger, pool int, oneShot bool, jobWall time.Duration) (*supervisor.Supervisor, string, error) {
	home, err := supervisor.ResolveHome(a.home)
	if err != nil {
		return nil, "", err
	}
	if err := prepareHome(home); err != nil {
		return nil, "", err
	}
	worker, err := findWorker(d.worker)
	if err != nil {
		return nil, "", err
	}
	tuneGC()
	// Workers must not inherit stray descriptors, and orphans of a killed
	// worker tree are reaped here, not by a lazy PID 1.
	unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err := sandbox.BecomeSubreaper(); err != nil {
		log.Warn("cannot become child subreaper", "err", err)
	}
	lcfg := launch.Config{WorkerPath: worker, Home: home, Isolation: d.isolationMode(),
		CgroupName: d.cgroup, PoolSize: pool, OneShot: oneShot, Logger: log,
		ProvePipeline: runtime.NumCPU() >= 2*d.slotCount()}
	if jobWall > 0 && jobWall < launch.DefaultDescribeTimeout {
		lcfg.DescribeTimeout = jobWall
	}
	// The launcher (cgroups, sockets, a described worker) is made once
	// the store has opened cleanly (supervisor.Open).
	newLauncher := func(ctx context.Context) (launch.Launcher, error) {
		l, err := launch.New(ctx, lcfg)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	// One trust for the home's stores: the key the daemon's engine sets
	// checks the job claims it signs into a shared store as well.
	trust := store.NewTrust()
	shared, err := d.cluster.open(ctx, log, trust)
	if err != nil {
		return nil, "", err
	}
	sup, err := supervisor.Open(ctx, supervisor.Config{Home: home, Slots: d.slotCount(), QueueLimit: d.queue.or(1024), NewLauncher: newLauncher,
		Limits: d.operatorLimits(), Retain: d.retain.d, DefaultRetries: uint32(d.retries.or(0)), OneShot: oneShot, Logger: log, Store: shared, Trust: trust, HostID: d.cluster.hostID,
		KeepLocalJobs: d.cluster.keepLocalJobs})
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
