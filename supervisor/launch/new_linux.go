package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/sandbox"
	"github.com/cyberia-to/cyber-supervisor/supervisor/workerids"
)

// What a process launcher is made with (Config), and how New makes one.

// Isolation says how workers are launched.
type Isolation int

const (
	// IsolationAuto isolates when this host can and says so when it
	// cannot (Capabilities then list no hard limits).
	IsolationAuto Isolation = iota
	// IsolationRequired refuses to start without namespaces and cgroups.
	IsolationRequired
	// IsolationOff launches plain worker processes (benchmark baseline,
	// hosts without the capability).
	IsolationOff
)

// Config configures the process launcher.
type Config struct {
	// WorkerPath is the nox-worker binary (static, CGO_ENABLED=0, for the
	// jail).
	WorkerPath string
	// GatePath is the gated init (cmd/sandbox-gate, its C init); default:
	// sandbox-gate beside the worker. Every worker placed in cgroups (each
	// jailed one, and an unjailed one where cgroups work) starts through
	// it: without one such a launcher is refused (ErrWorkerUnusable).
	GatePath string
	// Home is the supervisor's home: the socket and jail dirs live there.
	Home      string
	Isolation Isolation
	// Pids bounds every worker's process count where the pids controller
	// works (default 64): a fork bomb stays a contained failure.
	Pids int64
	// CgroupName is the parent group of this supervisor's attempt groups;
	// leftovers of earlier boots are looked for (and killed) under it, so
	// two homes must never share one. The default is derived from the
	// home: "cyber-supervisor-" and 12 hex digits of its path's SHA-256.
	CgroupName string
	// PoolSize is how many gated worker inits are kept ready (isolated
	// mode; 0: none, launch each from scratch).
	PoolSize int
	// OneShot: the launcher serves one job (cyber-supervisor run). Its
	// pool (PoolSize 1) starts its one worker at Prewarm, while the
	// supervisor records the job, and is never refilled.
	OneShot bool
	// WorkerProcs is GOMAXPROCS of every worker while it starts (default
	// 1). With more Ps the Go scheduler spins idle ones at each wakeup of
	// the gRPC goroutines, which cost 2.5 ms of CPU more per launch on the
	// 2-core machines this was measured on (a third of the worker's whole
	// CPU time for a trivial job). nox-worker raises it to 2 when its job
	// starts, so that a cancel is acknowledged while the VM runs.
	WorkerProcs int
	// ProvePipeline lets workers prove with their prover's step on a
	// second goroutine (protocol.EnvWorkerProvePipeline): set it when
	// each attempt has a CPU to spare (the daemon: at least two CPUs a
	// slot); otherwise the second goroutine only takes CPU time from
	// other attempts.
	ProvePipeline bool
	// WorkerIDs is the range of host uids (each with the gid of the same
	// number) that isolated workers run as, one per live worker (default
	// workerids.DefaultRange; see docs/sandbox.md, "Worker identity").
	WorkerIDs workerids.Range
	// WorkDirMargin is what a jailed worker's work dir (a tmpfs charged to
	// its memory) may hold, whatever its job's artifact limit: a prove's
	// certificate goes through the supervisor's stream to the attempt's
	// sandbox on disk, so the tmpfs holds the stream's FIFO and what a
	// library may write (default DefaultWorkDirMargin).
	WorkDirMargin int64
	// DescribeTimeout bounds the description of the worker at start,
	// from its launch to Describe's answer (default
	// DefaultDescribeTimeout). A one-shot run gives its job's wall-clock
	// limit when that is shorter: its job waits for the description.
	DescribeTimeout time.Duration
	Logger          *slog.Logger
}

// DefaultWorkDirMargin is Config.WorkDirMargin's default.
const DefaultWorkDirMargin = 1 << 20

// DefaultDescribeTimeout is Config.DescribeTimeout's default: a
// worker that completes its handshake and then never answers fails the
// launcher's start after it (an honest one describes itself in ~20 ms).
const DefaultDescribeTimeout = 15 * time.Second

// workDirInodes bounds the files a worker's work dir holds: an honest
// worker makes two (a temp file, renamed to the artifact).
const workDirInodes = 1024

// workerWorkDir is where the jail mounts the attempt directory (see
// docs/sandbox.md).
const workerWorkDir = "/work"

// New probes the host, describes the worker once (which also proves the
// whole launch path works) and computes what is enforced. Whatever stage
// fails, what the earlier ones made is given back by Close, on one path.
func New(ctx context.Context, cfg Config) (_ *ProcessLauncher, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	l := &ProcessLauncher{cfg: cfg, log: cfg.Logger,
		socketDir: WorkerSocketDir(cfg.Home), jailRoot: filepath.Join(cfg.Home, "jail"),
		workerEnv: workerEnv(cfg.WorkerProcs, cfg.ProvePipeline), workerTag: strconv.FormatInt(time.Now().UnixNano(), 36)}
	for _, d := range []string{l.socketDir, l.jailRoot} {
		if err := privateDir(d); err != nil {
			return nil, err
		}
	}
	self, _ := os.Executable()
	cache := openHostCache(cfg.Home, map[string]string{"supervisor": self, "worker": cfg.WorkerPath, "gate": cfg.GatePath}, l.log)
	mgr, err := limits.NewManager(limits.Options{Name: cfg.CgroupName, ProbeCache: cache})
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	l.mgr, l.host = mgr, mgr.Capabilities()
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	if err := l.chooseMode(); err != nil {
		return nil, err
	}
	if err := l.checkWorker(); err != nil {
		return nil, err
	}
	// Warm workers need the jail: binding one swaps its work dir under a
	// bind mount that follows the directory, which a plain worker (that
	// knows its dir by host path) would not see.
	if cfg.PoolSize > 0 && l.cgroupsUsable() && l.mode == sandbox.ModeIsolated {
		l.warm = newWarmPool(l, cfg.PoolSize, cfg.OneShot)
	}
	// The worker's description is kept with the probe: the same binaries
	// launched the same way describe themselves the same way. A launch
	// path broken since then fails the first attempt instead (launch
	// errors are internal_error).
	wkey := fmt.Sprintf("mode=%s gate=%v seccomp=%v landlock=%d procs=%d", l.mode, cfg.GatePath != "", l.host.Seccomp, l.host.Landlock, cfg.WorkerProcs)
	wcaps, ok := cache.worker(wkey)
	if !ok {
		if wcaps, err = l.describeWorker(ctx); err != nil {
			return nil, fmt.Errorf("describe worker %s: %w", cfg.WorkerPath, err)
		}
		cache.putWorker(wkey, wcaps)
	}
	cache.save()
	l.declared = l.declare(wcaps)
	return l, nil
}

// withDefaults fills in what cfg leaves unset.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Pids <= 0 {
		cfg.Pids = 64
	}
	if cfg.CgroupName == "" {
		sum := sha256.Sum256([]byte(filepath.Clean(cfg.Home)))
		cfg.CgroupName = "cyber-supervisor-" + hex.EncodeToString(sum[:6])
	}
	abs, err := filepath.Abs(cfg.WorkerPath)
	if err != nil {
		return cfg, fmt.Errorf("worker path: %w", err)
	}
	cfg.WorkerPath = abs
	if cfg.GatePath == "" {
		if p := filepath.Join(filepath.Dir(abs), "sandbox-gate"); isExecutable(p) {
			cfg.GatePath = p
		}
	}
	if cfg.WorkDirMargin <= 0 {
		cfg.WorkDirMargin = DefaultWorkDirMargin
	}
	if cfg.DescribeTimeout <= 0 {
		cfg.DescribeTimeout = DefaultDescribeTimeout
	}
	if cfg.WorkerIDs == (workerids.Range{}) {
		cfg.WorkerIDs = workerids.DefaultRange
	}
	return cfg, nil
}

// chooseMode decides how workers are launched from the configuration and
// what the probe found; isolated mode takes the workers' uid range.
func (l *ProcessLauncher) chooseMode() error {
	isolated := l.host.Namespaces && os.Geteuid() == 0
	switch {
	case l.cfg.Isolation == IsolationOff:
		l.mode = sandbox.ModeUnisolated
	case isolated:
		l.mode = sandbox.ModeIsolated
	case l.cfg.Isolation == IsolationRequired:
		return fmt.Errorf("%w: the jail needs root and pid/mount/net/ipc/uts namespaces: %s", ErrIsolationUnavailable, isolationMissing(l.host))
	default:
		l.mode = sandbox.ModeUnisolated
		l.log.Warn("workers run without isolation on this host: no jail, and no memory or process limit; wall-clock limits and cancellation still hold",
			"why", reasonsText(l.probeReport().Reasons))
	}
	if l.mode != sandbox.ModeIsolated {
		return nil
	}
	ids, err := workerids.New(l.cfg.WorkerIDs)
	if err != nil {
		return err
	}
	l.ids = ids
	return nil
}

// checkWorker refuses binaries and hosts the chosen mode cannot launch
// with: a jailed worker must be static and executable by the workers'
// uids, a worker in cgroups needs the gate, and required isolation a
// memory limit and a tree kill.
func (l *ProcessLauncher) checkWorker() error {
	if l.mode == sandbox.ModeIsolated {
		if err := executableByOthers(l.cfg.WorkerPath); err != nil {
			return err
		}
		if err := staticExecutable(l.cfg.WorkerPath); err != nil {
			return err
		}
	}
	if l.cfg.GatePath == "" && (l.mode == sandbox.ModeIsolated || l.cgroupsUsable()) {
		return fmt.Errorf("%w: no sandbox-gate beside %s: the gated init that places and jails every worker (scripts/build.sh builds it)", ErrWorkerUnusable, l.cfg.WorkerPath)
	}
	if l.cfg.Isolation == IsolationRequired && !(l.host.MemoryLimit && l.host.TreeKill) {
		return fmt.Errorf("%w: required isolation needs a cgroup memory limit and a cgroup tree kill: %s", ErrIsolationUnavailable, reasonsText(l.host.Reasons))
	}
	return nil
}

// isolationMissing says which of the jail's needs the host lacks.
func isolationMissing(host limits.Capabilities) string {
	var missing []string
	if uid := os.Geteuid(); uid != 0 {
		missing = append(missing, fmt.Sprintf("this process is not root (uid %d)", uid))
	}
	if !host.Namespaces {
		missing = append(missing, "no namespaces ("+host.Reasons[limits.ReasonNamespaces]+")")
	}
	return strings.Join(missing, "; ")
}

// reasonsText is the probe's reasons as one readable line, "key: why;
// key, key: why", in key order, each reason said once with all the keys
// it is the reason of (without cgroups, six capabilities share one).
func reasonsText(r map[string]string) string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var whys []string
	keysOf := map[string][]string{}
	for _, k := range keys {
		// The probe points from one reason to another by its JSON key
		// ("see reasons.cgroups"); in this line the key stands alone.
		why := strings.ReplaceAll(r[k], limits.SeeReason, "(see ")
		if keysOf[why] == nil {
			whys = append(whys, why)
		}
		keysOf[why] = append(keysOf[why], k)
	}
	parts := make([]string, len(whys))
	for i, why := range whys {
		parts[i] = strings.Join(keysOf[why], ", ") + ": " + why
	}
	return strings.Join(parts, "; ")
}

// merge adds what the host enforces to what the worker enforces itself.
