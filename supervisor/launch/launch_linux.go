package launch

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/pluginclient"
	"github.com/cyberia-to/cyber-supervisor/sandbox"
	"github.com/cyberia-to/cyber-supervisor/supervisor/workerids"
)

// ProcessLauncher launches nox-worker processes through sandbox/ (gate,
// namespaces, jail, seccomp, Landlock) in cgroups from limits/, and
// speaks go-plugin gRPC to them.
type ProcessLauncher struct {
	cfg       Config
	log       *slog.Logger
	mgr       *limits.Manager
	host      limits.Capabilities
	mode      sandbox.Mode
	declared  Capabilities
	socketDir string
	jailRoot  string
	// ids hands out the workers' host uids (isolated mode only).
	ids *workerids.Pool
	// warm holds workers started ahead of time (see warm_linux.go).
	warm *warmPool
	// workerEnv is the environment every worker gets (see workerEnv); each
	// also gets its own id, numbered by workerSeq.
	workerEnv []string
	workerTag string
	workerSeq atomic.Uint64
	// seccompExtra widens the workers' allowlist: tests only, to reach a
	// defense behind it (the socket pinning) with an attack it stops.
	seccompExtra []string
}

func (l *ProcessLauncher) merge(w protocol.Capabilities) protocol.Capabilities {
	c := w
	cg := l.mode == sandbox.ModeIsolated || l.cgroupsUsable()
	// A deadline and a cancellation's final kill are enforced by killing
	// the worker: its whole tree through the cgroup (or the PID 1 of its
	// jail), or, without either, the worker process and its process
	// group. That is enough on every host: nox-worker never forks, and a
	// nox program has no way to, so killing the process ends the attempt.
	c.Limits.WallTime = true
	c.Limits.Cancellation = w.Limits.Cancellation
	c.Limits.Memory = cg && l.host.MemoryLimit && l.host.OOMDetection
	c.Limits.Pids = cg && l.host.PidsLimit
	c.Limits.CPU = cg && l.host.CPUQuota
	c.Backend = protocol.BackendIsolatedProcess
	if l.mode == sandbox.ModeUnisolated {
		c.Backend = protocol.BackendProcess
	}
	return c
}

func (l *ProcessLauncher) cgroupsUsable() bool { return l.host.CgroupCreate }

// probeReport is the probe as this launcher enforces it. The probe's own
// fallback for a deadline without a cgroup tree kill is the kill of the
// PID 1 of the worker's PID namespace, which an unisolated worker does
// not have: it is killed with its process group instead (enough, see
// merge), which is what the report then says.
func (l *ProcessLauncher) probeReport() limits.Capabilities {
	c := l.host
	if l.mode != sandbox.ModeUnisolated || c.TreeKill {
		return c
	}
	c.Reasons = maps.Clone(c.Reasons)
	if c.Reasons == nil {
		c.Reasons = map[string]string{}
	}
	c.WallClock = true
	c.Reasons[limits.ReasonWallClock] = "no cgroup tree kill: a deadline or a cancellation's last step kills the worker process and its process group (nox-worker never forks)"
	return c
}

// Capabilities: what the host and the worker enforce; a jailed worker
// works in a tmpfs of its own (OwnWorkDirs); a warm pool when one is kept.
func (l *ProcessLauncher) Capabilities() Capabilities { return l.declared }

func (l *ProcessLauncher) declare(worker protocol.Capabilities) Capabilities {
	return Capabilities{Worker: l.merge(worker), OwnWorkDirs: l.mode == sandbox.ModeIsolated, Warm: l.warm != nil,
		Host: &HostReport{Isolation: l.mode.String(), Probe: l.probeReport()}}
}

// CgroupName is the parent group of this launcher's attempt groups.
func (l *ProcessLauncher) CgroupName() string { return l.cfg.CgroupName }

// RemoveLeftovers kills and removes the cgroups of earlier instances and
// the plugin socket directories they left. It runs only once the store's
// lock is held, so nothing here can belong to a live supervisor.
func (l *ProcessLauncher) RemoveLeftovers(ctx context.Context) ([]string, error) {
	removed, err := l.mgr.RemoveLeftovers(ctx)
	for i, g := range removed {
		removed[i] = "cgroup " + g
	}
	if errors.Is(err, limits.ErrCgroupsUnavailable) {
		err = nil
	}
	var rerr error
	for _, dir := range []string{l.socketDir, warmDir(l.cfg.Home)} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if rmErr := os.RemoveAll(p); rmErr != nil {
				rerr = errors.Join(rerr, rmErr)
			} else {
				removed = append(removed, "worker dir "+p)
			}
		}
	}
	return removed, errors.Join(err, rerr)
}

func (l *ProcessLauncher) Close() error {
	if l.warm != nil {
		l.warm.close()
	}
	if !strings.HasPrefix(l.socketDir, l.cfg.Home+string(filepath.Separator)) {
		// A socket dir in the temp dir (long home paths) goes with its
		// supervisor once empty; one under the home stays with the home.
		os.Remove(l.socketDir)
	}
	err := l.mgr.Close(context.Background())
	if l.ids != nil {
		// Every worker is gone by now: their ids' host-wide leases go.
		err = errors.Join(err, l.ids.Close())
	}
	return err
}

// describeWorker launches a worker and asks it to describe itself, all
// within DescribeTimeout.
func (l *ProcessLauncher) describeWorker(ctx context.Context) (protocol.Capabilities, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.DescribeTimeout)
	defer cancel()
	dir, err := os.MkdirTemp(l.socketDir, "describe")
	if err != nil {
		return protocol.Capabilities{}, err
	}
	defer os.RemoveAll(dir)
	timedOut := func(err error) error {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return protocol.Errorf(protocol.CodeDeadlineExceeded, "the worker did not describe itself within %s of its launch", l.cfg.DescribeTimeout)
		}
		return err
	}
	w, err := l.launch(ctx, "describe", 0, protocol.Limits{}, dir)
	if err != nil {
		return protocol.Capabilities{}, timedOut(err)
	}
	defer w.Close(context.Background())
	caps, _, err := w.Describe(ctx)
	if err != nil {
		return protocol.Capabilities{}, timedOut(err)
	}
	return caps, nil
}

// Prewarm starts the warm pool's workers now (after recovery has removed
// what earlier boots left in the worker dirs), so that the first attempt
// finds one started while it was being recorded.
func (l *ProcessLauncher) Prewarm() error {
	if l.warm == nil {
		return ErrUnsupported
	}
	l.warm.prewarm()
	return nil
}

// Launch starts the attempt's worker: a warm one bound to the attempt
// when one is ready, otherwise a fresh one.
func (l *ProcessLauncher) Launch(ctx context.Context, req Request) (Worker, error) {
	if err := l.declared.CheckRequest(req); err != nil {
		return nil, err
	}
	if l.warm != nil {
		if w := l.warm.take(req); w != nil {
			return w, nil
		}
	}
	return l.launch(ctx, req.Job, req.Attempt, req.Limits, req.WorkDir)
}

func (l *ProcessLauncher) launch(ctx context.Context, job string, attempt uint32, lim protocol.Limits, workDir string) (*processWorker, error) {
	w := &processWorker{log: l.log}
	var placement sandbox.Placement
	if l.cgroupsUsable() {
		g, err := l.mgr.Create(groupName(job, attempt), l.groupSpec(lim))
		if err != nil {
			return nil, protocol.Errorf(protocol.CodeInternalError, "create cgroup: %v", err)
		}
		w.group, placement = g, groupPlacement{g}
	}
	scfg := l.sandboxConfig(workDir, lim)
	if d, ok := ctx.Deadline(); ok {
		// The handshake ends with the caller's time, if that is sooner.
		if left := time.Until(d); left < sandbox.DefaultStartTimeout {
			scfg.StartTimeout = max(left, time.Millisecond)
		}
	}
	if l.mode == sandbox.ModeIsolated {
		if err := w.takeWorkDir(l, lim, &scfg); err != nil {
			w.abandon()
			return nil, protocol.Errorf(protocol.CodeInternalError, "work dir: %v", err)
		}
	}
	scfg.Placement = placement
	w.stderr = &stderrLog{log: l.log, job: job, attempt: attempt}
	scfg.Stderr = w.stderr
	w.workDir = workDir
	if l.mode == sandbox.ModeIsolated {
		w.workDir = workerWorkDir
	}
	if w.group != nil {
		scfg.KillHook = w.group.Kill
	}
	sb, err := sandbox.New(scfg)
	if err != nil {
		w.abandon()
		return nil, protocol.Errorf(protocol.CodeInternalError, "sandbox: %v", err)
	}
	w.sb = sb
	cc, err := sb.ClientConfig(&plugin.ClientConfig{
		HandshakeConfig:  pluginclient.Handshake,
		Plugins:          pluginclient.PluginMap(),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
		GRPCDialOptions:  pluginclient.DialOptions,
	})
	if err != nil {
		w.abandon()
		return nil, protocol.Errorf(protocol.CodeInternalError, "sandbox: %v", err)
	}
	w.client = plugin.NewClient(cc)
	rpc, err := w.client.Client()
	if err != nil {
		w.Close(context.Background())
		if refused := sb.AddressRefused(); refused != nil {
			// The worker tried to make us connect to something it did not
			// bind: hostile, not a launch that failed by chance.
			l.log.Error("worker announced a socket that is not its own", "job", job, "attempt", attempt, "error", refused)
			return nil, hostileWorker(refused)
		}
		return nil, protocol.Errorf(protocol.CodeInternalError, "start worker: %v", err)
	}
	wc, err := pluginclient.Dispense(rpc)
	if err != nil {
		w.Close(context.Background())
		// A worker that cannot be dispensed is the launch failing, not
		// an I/O error of a job.
		return nil, protocol.Errorf(protocol.CodeInternalError, "dispense worker: %s", protocol.AsError(err).Message)
	}
	w.wc = wc
	return w, nil
}
