package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

// Sandbox is one worker launch for one attempt. It is created by New, handed
// to go-plugin through ClientConfig (or RunnerFunc), and finished with Kill.
type Sandbox struct {
	cfg Config
	log hclog.Logger

	launched chan struct{} // closed once the fork succeeded or failed
	done     chan struct{} // closed once the worker is reaped (or never ran)

	mu            sync.Mutex
	cookieKey     string
	runnerMade    bool
	started       bool
	killed        bool
	exited        bool // the process has exited; it may not be reaped yet
	hostSocketDir string
	env           []string
	cmd           *exec.Cmd
	pid           int
	stdout        *pipeReader
	stderr        *pipeReader
	report        Report
	setupErr      error
	waitErr       error
	state         *os.ProcessState
	gated         *gatedProc // set when taken from a Pool
	netns         *netnsLease
	sock          *workerSocket // pinned by PluginToHost (socket_linux.go)
	sockClosed    bool
	addrErr       error // why the announced address was refused

	stderrTail   tailBuffer
	killOnce     sync.Once
	killErr      error
	teardownOnce sync.Once
}

// New validates cfg and returns a Sandbox ready to be given to go-plugin.
// Nothing is created on the host until go-plugin starts the runner.
func New(cfg Config) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	return &Sandbox{
		cfg:      c,
		log:      hclog.NewNullLogger(),
		launched: make(chan struct{}),
		done:     make(chan struct{}),
	}, nil
}

// ClientConfig returns a copy of base that launches the plugin through s:
// RunnerFunc, a socket directory under Config.SocketDir, Config.StartTimeout
// and no host environment. base must not set Cmd, Reattach or SecureConfig
// (the latter checks a path go-plugin never sees with a RunnerFunc).
func (s *Sandbox) ClientConfig(base *plugin.ClientConfig) (*plugin.ClientConfig, error) {
	switch {
	case base == nil:
		return nil, fmt.Errorf("%w: nil plugin.ClientConfig", ErrInvalidConfig)
	case base.Cmd != nil, base.Reattach != nil, base.RunnerFunc != nil:
		return nil, fmt.Errorf("%w: plugin.ClientConfig must not set Cmd, Reattach or RunnerFunc", ErrInvalidConfig)
	case base.SecureConfig != nil:
		return nil, fmt.Errorf("%w: plugin.ClientConfig.SecureConfig cannot work with a RunnerFunc", ErrInvalidConfig)
	case base.UnixSocketConfig != nil && base.UnixSocketConfig.Group != "" && s.cfg.Mode == ModeIsolated:
		return nil, fmt.Errorf("%w: UnixSocketConfig.Group cannot be resolved inside the jail", ErrInvalidConfig)
	}
	cc := *base
	cc.RunnerFunc = s.RunnerFunc
	cc.UnixSocketConfig = &plugin.UnixSocketConfig{TempDir: s.cfg.SocketDir}
	if base.UnixSocketConfig != nil {
		cc.UnixSocketConfig.Group = base.UnixSocketConfig.Group
	}
	cc.StartTimeout = s.cfg.StartTimeout
	cc.SkipHostEnv = true
	// go-plugin puts its own dialer first; a later one wins. Ours reaches
	// only the socket PluginToHost pinned.
	cc.GRPCDialOptions = append(slices.Clip(base.GRPCDialOptions), grpc.WithContextDialer(s.dialWorker))
	s.mu.Lock()
	s.cookieKey = base.MagicCookieKey
	s.mu.Unlock()
	return &cc, nil
}

// RunnerFunc implements plugin.ClientConfig.RunnerFunc. go-plugin passes an
// exec.Command("") whose only meaningful content is Env (the magic cookie and
// PLUGIN_* variables), and tmpDir, the socket directory it created under
// UnixSocketConfig.TempDir. It may be called once per Sandbox.
func (s *Sandbox) RunnerFunc(l hclog.Logger, cmd *exec.Cmd, tmpDir string) (runner.Runner, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tmpDir = filepath.Clean(tmpDir)
	if !filepath.IsAbs(tmpDir) || tmpDir == s.cfg.SocketDir || !within(s.cfg.SocketDir, tmpDir) {
		return nil, fmt.Errorf("%w: plugin socket dir %q is not below SocketDir %q (set UnixSocketConfig.TempDir)",
			ErrInvalidConfig, tmpDir, s.cfg.SocketDir)
	}
	// go-plugin does not remove its socket dir when RunnerFunc fails.
	refuse := func(err error) (runner.Runner, error) {
		_ = os.RemoveAll(tmpDir)
		return nil, err
	}
	switch {
	case s.runnerMade:
		return refuse(ErrAlreadyStarted)
	case s.killed:
		return refuse(ErrKilled)
	case cmd == nil:
		return refuse(fmt.Errorf("%w: nil command from go-plugin", ErrInvalidConfig))
	}
	if id := s.cfg.RunAs; id != nil {
		if err := os.Chown(tmpDir, int(id.UID), int(id.GID)); err != nil {
			return refuse(fmt.Errorf("sandbox: chown socket dir %s: %w", tmpDir, err))
		}
	}
	pass := s.cfg.PassEnv
	if s.cookieKey != "" {
		pass = append(pass[:len(pass):len(pass)], s.cookieKey)
	}
	s.env = workerEnv(cmd.Env, pass, s.cfg.Env, s.cfg.Mode == ModeIsolated)
	s.hostSocketDir = tmpDir
	if l != nil {
		s.log = l.Named("sandbox")
	}
	s.runnerMade = true
	return &pluginRunner{s: s}, nil
}

// Pid is the worker's pid in the supervisor's PID namespace, 0 before start.
func (s *Sandbox) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// Report says what was applied to the running worker.
func (s *Sandbox) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.report
}

// Done is closed once the worker has exited and been reaped.
func (s *Sandbox) Done() <-chan struct{} { return s.done }

// Wait blocks until the worker has exited, then releases what the launch
// held on the host, and returns the exit state (nil if it never ran).
func (s *Sandbox) Wait(ctx context.Context) (*os.ProcessState, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.teardown()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.waitErr
}

// Kill ends the worker's whole tree without a grace period: the KillHook
// (the cgroup kill) first, then SIGKILL to the worker, which in the isolated
// mode is PID 1 of its namespace so that everything in it dies too. It
// waits for the worker to be reaped (bounded by ctx) and releases the socket
// directory. Kill is idempotent and safe to call concurrently with Start,
// Wait and go-plugin's own Kill.
func (s *Sandbox) Kill(ctx context.Context) error {
	s.killOnce.Do(func() { s.killErr = s.kill(ctx) })
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		select {
		case <-s.done:
		case <-ctx.Done():
			return fmt.Errorf("sandbox: kill pid %d: %w", s.Pid(), ctx.Err())
		}
	}
	s.teardown()
	return s.killErr
}

func (s *Sandbox) kill(ctx context.Context) error {
	s.mu.Lock()
	s.killed = true
	started := s.started
	gp := s.gated
	if !started {
		s.gated = nil
	}
	s.mu.Unlock()
	if !started {
		if gp != nil {
			return discard(gp) // taken from a Pool, never started
		}
		return nil
	}
	<-s.launched // a fork in flight finishes in microseconds
	var errs []error
	if hook := s.cfg.KillHook; hook != nil {
		if err := hook(ctx); err != nil {
			errs = append(errs, fmt.Errorf("sandbox: kill hook: %w", err))
		}
	}
	s.signal()
	return errors.Join(errs...)
}

// signal SIGKILLs the worker and its process group unless it has already
// exited. The waiter marks exit under s.mu before it reaps, so while we hold
// s.mu and see !exited the pid (and the group id equal to it) is still ours.
func (s *Sandbox) signal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.exited {
		return
	}
	_ = unix.Kill(-s.pid, unix.SIGKILL)
	_ = unix.Kill(s.pid, unix.SIGKILL)
}

// abort is the failure path of Start: kill, wait, release.
func (s *Sandbox) abort() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Kill(ctx)
}

func (s *Sandbox) start(ctx context.Context) error {
	s.mu.Lock()
	switch {
	case s.started:
		s.mu.Unlock()
		return ErrAlreadyStarted
	case s.killed:
		s.started = true
		s.mu.Unlock()
		return s.launchFailed(ErrKilled)
	}
	s.started = true
	gp := s.gated
	s.mu.Unlock()

	gated := s.cfg.Mode == ModeIsolated || s.cfg.Placement != nil || s.cfg.Rlimits != (Rlimits{})
	var err error
	begin := time.Now()
	switch {
	case gp != nil:
		err = s.adopt(gp)
	case gated:
		gp, err = spawnGated(&s.cfg)
		if err != nil {
			return s.launchFailed(err)
		}
		err = s.adopt(gp)
	default:
		err = s.spawnPlain()
	}
	if err != nil {
		return err
	}
	spawn := time.Since(begin)
	if !gated && gp == nil {
		s.mu.Lock()
		s.report = Report{Mode: s.cfg.Mode, Spawn: spawn}
		s.mu.Unlock()
		return nil
	}
	if gp.pooled {
		spawn = 0 // paid before the attempt existed
	}
	if err := s.release(ctx, gp, gp.pooled, spawn); err != nil {
		s.abort()
		return err
	}
	return nil
}

// gatedProc is an init process blocked on its gate.
type gatedProc struct {
	cmd    *exec.Cmd
	gate   *os.File
	stdout *os.File
	stderr *os.File
	pooled bool
	// placed: forked in its groups (ThreadPlacement); Place is not needed.
	placed bool
	netns  *netnsLease // joined instead of CLONE_NEWNET; nil: fresh
	// netnsFD and workFD are where the init finds the namespace to join
	// and the work mount to attach (0: none inherited).
	netnsFD, workFD int
}

func (g *gatedProc) closeAll() {
	for _, f := range []*os.File{g.gate, g.stdout, g.stderr} {
		if f != nil {
			f.Close()
		}
	}
}

// spawnGated forks the worker binary in init mode, in its namespaces (and,
// through CLONE_INTO_CGROUP, its cgroup2 group), blocked on the gate.
func spawnGated(cfg *Config) (*gatedProc, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socketpair for gate: %w", err)
	}
	// Only our end is non-blocking (pollable, so reads honour deadlines);
	// the init's end blocks in read(2) until the config or EOF arrives.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, fmt.Errorf("sandbox: gate nonblock: %w", err)
	}
	gate := os.NewFile(uintptr(fds[0]), "gate")
	child := os.NewFile(uintptr(fds[1]), "gate-child")
	defer child.Close()

	outR, outW, err := os.Pipe()
	if err != nil {
		gate.Close()
		return nil, fmt.Errorf("sandbox: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		gate.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("sandbox: stderr pipe: %w", err)
	}
	initPath := cfg.WorkerPath
	if cfg.GatePath != "" {
		initPath = cfg.GatePath
	}
	attr := sysProcAttr(cfg)
	extra := []*os.File{child}
	gp := &gatedProc{}
	lease := leaseNetns(cfg)
	if lease != nil {
		attr.Cloneflags &^= unix.CLONE_NEWNET
		extra = append(extra, lease.f)
		gp.netnsFD = 2 + len(extra)
	}
	if cfg.WorkFS != nil {
		f, err := cfg.WorkFS.file()
		if err != nil {
			lease.end(true)
			gate.Close()
			outR.Close()
			outW.Close()
			errR.Close()
			errW.Close()
			return nil, err
		}
		extra = append(extra, f)
		gp.workFD = 2 + len(extra)
	}
	cmd := &exec.Cmd{
		Path:        initPath,
		Args:        []string{filepath.Base(initPath), initArg, "3"},
		Env:         []string{},
		Stdout:      outW,
		Stderr:      errW,
		ExtraFiles:  extra,
		SysProcAttr: attr,
	}
	// With a ThreadPlacement the init is born in its v1 groups (and, by
	// CLONE_INTO_CGROUP, its v2 group): release then has nothing to move.
	place, _ := cfg.Placement.(ThreadPlacement)
	res := theLauncher().start(cmd, place)
	err = res.err
	gp.placed = res.placed
	outW.Close()
	errW.Close()
	if err != nil {
		lease.end(true) // nothing ran in it
		gate.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("sandbox: start %s: %w", cfg.WorkerPath, err)
	}
	gp.cmd, gp.gate, gp.stdout, gp.stderr, gp.netns = cmd, gate, outR, errR, lease
	return gp, nil
}

func (s *Sandbox) spawnPlain() error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return s.launchFailed(fmt.Errorf("sandbox: stdout pipe: %w", err))
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return s.launchFailed(fmt.Errorf("sandbox: stderr pipe: %w", err))
	}
	s.mu.Lock()
	env := s.env
	s.mu.Unlock()
	if env == nil {
		env = []string{}
	}
	cmd := &exec.Cmd{
		Path:        s.cfg.WorkerPath,
		Args:        append([]string{filepath.Base(s.cfg.WorkerPath)}, s.cfg.Args...),
		Env:         env,
		Stdout:      outW,
		Stderr:      errW,
		SysProcAttr: sysProcAttr(&s.cfg),
	}
	err = theLauncher().start(cmd, nil).err
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return s.launchFailed(fmt.Errorf("sandbox: start %s: %w", s.cfg.WorkerPath, err))
	}
	return s.adopt(&gatedProc{cmd: cmd, stdout: outR, stderr: errR})
}

// launchFailed settles a start that produced no process. go-plugin will
// not call Kill for it (the runner has no ID), so release here.
func (s *Sandbox) launchFailed(err error) error {
	close(s.launched)
	close(s.done)
	s.teardown()
	return err
}

// adopt makes gp this sandbox's process and starts its waiter.
func (s *Sandbox) adopt(gp *gatedProc) error {
	s.mu.Lock()
	s.cmd = gp.cmd
	s.pid = gp.cmd.Process.Pid
	s.stdout = newPipeReader(gp.stdout, s.cfg.Stdout, nil)
	s.stderr = newPipeReader(gp.stderr, s.cfg.Stderr, &s.stderrTail)
	s.netns = gp.netns
	killed := s.killed
	s.mu.Unlock()
	go s.waitLoop()
	close(s.launched)
	if killed {
		if gp.gate != nil {
			gp.gate.Close()
		}
		s.signal()
		s.abort()
		return ErrKilled
	}
	return nil
}

func (s *Sandbox) waitLoop() {
	var info unix.Siginfo
	for {
		// WNOWAIT: learn about the exit without reaping, so that signal()
		// can rely on the pid staying ours until exited is set.
		err := unix.Waitid(unix.P_PID, s.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	s.mu.Lock()
	s.exited = true
	s.mu.Unlock()
	err := s.cmd.Wait()
	owned.release(s.pid)
	// A Pool's init may run a configuration without seccomp: then the
	// worker could open any socket in the namespace (see netnsPool).
	s.netns.end(s.cfg.Seccomp)
	s.mu.Lock()
	s.waitErr = err
	s.state = s.cmd.ProcessState
	s.mu.Unlock()
	close(s.done)
}

// release places the gated init, sends it its config and waits until it
// has exec'd the worker (the gate reaches EOF) or reported a failure.
func (s *Sandbox) release(ctx context.Context, gp *gatedProc, pooled bool, spawn time.Duration) error {
	defer gp.gate.Close()
	pid := gp.cmd.Process.Pid
	rep := Report{Mode: s.cfg.Mode, Gated: true, Spawn: spawn}
	placeBegin := time.Now()
	if s.cfg.Mode == ModeIsolated {
		rep.Namespaces = s.cfg.Namespaces
	}
	if p := s.cfg.Placement; p != nil {
		if pooled {
			// A pooled init was forked before its attempt's cgroup existed:
			// move it into the cgroup2 group now, still gated.
			if fd, ok := p.CgroupFD(); ok {
				if err := joinCgroupFD(fd, pid); err != nil {
					return fmt.Errorf("%w: pid %d: %v", ErrPlacement, pid, err)
				}
			}
		}
		if !gp.placed || pooled {
			if err := p.Place(pid); err != nil {
				return fmt.Errorf("%w: pid %d: %v", ErrPlacement, pid, err)
			}
		}
		rep.Placed = true
	}
	rep.Place = time.Since(placeBegin)
	setupBegin := time.Now()
	s.mu.Lock()
	killed := s.killed
	s.mu.Unlock()
	if killed {
		return ErrKilled
	}

	ic, err := s.initConfig(gp.workFD)
	if err != nil {
		return err
	}
	ic.Netns = gp.netnsFD
	b, err := ic.Encode()
	if err != nil {
		return fmt.Errorf("sandbox: encode init config: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = gp.gate.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := gp.gate.Write(b); err != nil {
		return s.gateErr(ctx, "write init config", err)
	}
	if err := shutdownWrite(gp.gate); err != nil {
		return fmt.Errorf("sandbox: gate of pid %d: %w", pid, err)
	}

	dec := json.NewDecoder(io.LimitReader(gp.gate, 64<<10))
	var last *gate.Status
	for {
		var st gate.Status
		if err := dec.Decode(&st); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return s.gateErr(ctx, "read init status", err)
		}
		last = &st
		if st.Error != "" {
			err := fmt.Errorf("%w: pid %d: %s", ErrSetup, pid, st.Error)
			s.mu.Lock()
			s.setupErr = err
			s.mu.Unlock()
			return err
		}
	}
	if last == nil {
		err := fmt.Errorf("%w: pid %d: init exited without a status%s", ErrSetup, pid, s.exitNote())
		s.mu.Lock()
		s.setupErr = err
		s.mu.Unlock()
		return err
	}
	rep.Jail = last.Jail
	rep.NoNewPrivs = last.NoNewPrivs
	rep.CapsDropped = last.CapsDropped
	rep.Seccomp = last.Seccomp
	rep.LandlockABI = last.LandlockABI
	rep.Setup = time.Since(setupBegin)
	rep.InitJail = time.Duration(last.JailUS) * time.Microsecond
	rep.InitHarden = time.Duration(last.HardenUS) * time.Microsecond
	s.mu.Lock()
	s.report = rep
	s.mu.Unlock()
	return nil
}

func (s *Sandbox) gateErr(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return fmt.Errorf("sandbox: %s (pid %d%s): %w", op, s.Pid(), s.exitNote(), err)
}

// exitNote waits briefly for the init's exit status to explain an early
// EOF on the gate.
func (s *Sandbox) exitNote() string {
	select {
	case <-s.done:
	case <-time.After(100 * time.Millisecond):
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	note := ""
	if s.state != nil {
		note = " (" + s.state.String() + ")"
	}
	if tail := s.stderrTail.String(); tail != "" {
		note += "; stderr: " + tail
	}
	return note
}

// initConfig is the init's config; workFD is where it inherited the
// work mount (0: bind WorkDir).
func (s *Sandbox) initConfig(workFD int) (*gate.Config, error) {
	s.mu.Lock()
	env, sockDir := s.env, s.hostSocketDir
	s.mu.Unlock()
	c := &s.cfg
	ic := &gate.Config{
		Path: c.WorkerPath,
		Args: append([]string{filepath.Base(c.WorkerPath)}, c.Args...),
		Env:  env,
	}
	if c.Rlimits.NoFile != 0 {
		ic.Rlimits = append(ic.Rlimits, gate.Rlimit{Resource: unix.RLIMIT_NOFILE, Value: c.Rlimits.NoFile})
	}
	if c.Rlimits.FSize != 0 {
		ic.Rlimits = append(ic.Rlimits, gate.Rlimit{Resource: unix.RLIMIT_FSIZE, Value: c.Rlimits.FSize})
	}
	if c.Mode != ModeIsolated {
		return ic, nil
	}
	ic.Rlimits = append(ic.Rlimits, gate.Rlimit{Resource: unix.RLIMIT_CORE, Value: 0})
	ic.Jail = &gate.Jail{
		Root:       c.JailRoot,
		WorkerPath: c.WorkerPath,
		WorkDir:    c.WorkDir,
		SocketDir:  sockDir,
		TmpfsBytes: uint64(c.TmpfsBytes),
	}
	if c.WorkFS != nil {
		if workFD == 0 {
			return nil, fmt.Errorf("%w: the init has no work mount", ErrInvalidConfig)
		}
		ic.Jail.WorkDir, ic.Jail.WorkMount = "", workFD
	}
	ic.CgroupNS = c.Namespaces&NamespaceCgroup != 0
	if id := c.RunAs; id != nil && c.Namespaces&NamespaceUser == 0 {
		// Root: the init switches once the jail is built. (In a user
		// namespace RunAs is the supervisor itself, uid 0 inside.)
		ic.Identity = &gate.Identity{UID: id.UID, GID: id.GID}
	}
	ic.Path = jailWorkerPath
	if c.Namespaces&NamespaceUTS != 0 {
		ic.Hostname = c.Hostname
	}
	ic.Harden = true
	ll, err := landlockPlan(c.Landlock)
	if err != nil {
		return nil, err
	}
	ic.Landlock = ll
	if c.Seccomp {
		progs, err := seccompPrograms(c.SeccompAllow)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		ic.Seccomp = progs
	}
	return ic, nil
}

func sysProcAttr(c *Config) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		// Own session and process group: the worker is not part of the
		// supervisor's terminal job control, and kill(-pid) reaches the
		// descendants of an unisolated worker.
		Setsid:    true,
		Pdeathsig: syscall.SIGKILL,
	}
	if c.Mode == ModeIsolated {
		ns := c.Namespaces
		for _, m := range []struct {
			n    Namespaces
			flag uintptr
		}{
			{NamespacePID, unix.CLONE_NEWPID}, {NamespaceMount, unix.CLONE_NEWNS},
			{NamespaceIPC, unix.CLONE_NEWIPC}, {NamespaceUTS, unix.CLONE_NEWUTS},
			{NamespaceNet, unix.CLONE_NEWNET}, {NamespaceUser, unix.CLONE_NEWUSER},
		} {
			if ns&m.n != 0 {
				attr.Cloneflags |= m.flag
			}
		}
		if ns&NamespaceUser != 0 {
			uid, gid := os.Geteuid(), os.Getegid()
			if c.RunAs != nil {
				uid, gid = int(c.RunAs.UID), int(c.RunAs.GID)
			}
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
			attr.GidMappingsEnableSetgroups = false
			attr.Credential = &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true}

		}
	}
	if p := c.Placement; p != nil {
		if fd, ok := p.CgroupFD(); ok {
			attr.UseCgroupFD = true
			attr.CgroupFD = fd
		}
	}
	return attr
}

func shutdownWrite(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Shutdown(int(fd), unix.SHUT_WR) }); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("shutdown: %w", serr)
	}
	return nil
}

// joinCgroupFD writes pid into cgroup.procs of the cgroup2 directory fd.
func joinCgroupFD(dirfd, pid int) error {
	fd, err := unix.Openat(dirfd, "cgroup.procs", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open cgroup.procs: %w", err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(strconv.Itoa(pid))); err != nil {
		return fmt.Errorf("write cgroup.procs: %w", err)
	}
	return nil
}

// teardown releases host resources once the worker is gone: the pipes (after
// go-plugin has drained them, or a short grace) and the socket directory.
func (s *Sandbox) teardown() {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		select {
		case <-s.done:
		default:
			return // still running; the next Wait or Kill tears down
		}
	}
	s.teardownOnce.Do(func() {
		s.closeSocket()
		s.mu.Lock()
		out, errp, dir := s.stdout, s.stderr, s.hostSocketDir
		s.mu.Unlock()
		for _, p := range []*pipeReader{out, errp} {
			if p != nil {
				p.closeAfterEOF(100 * time.Millisecond)
			}
		}
		if dir != "" && within(s.cfg.SocketDir, dir) && dir != s.cfg.SocketDir {
			if err := os.RemoveAll(dir); err != nil {
				s.log.Warn("remove plugin socket dir", "dir", dir, "error", err)
			}
		}
	})
}

func (s *Sandbox) diagnose() string {
	s.mu.Lock()
	setupErr, state := s.setupErr, s.state
	s.mu.Unlock()
	msg := "sandboxed worker " + s.cfg.WorkerPath + " (" + s.cfg.Mode.String() + ")"
	if setupErr != nil {
		msg += "\nsetup: " + setupErr.Error()
	}
	if state != nil {
		msg += "\nexit: " + state.String()
	}
	if tail := s.stderrTail.String(); tail != "" {
		msg += "\nstderr (tail):\n" + tail
	}
	return msg
}

// pipeReader hands a worker pipe to go-plugin, copying into the caller's
// sink and remembering EOF so teardown can close it without cutting off a
// reader that is still draining.
type pipeReader struct {
	f       *os.File
	tee     io.Writer
	tail    *tailBuffer
	eof     chan struct{}
	eofOnce sync.Once
}

func newPipeReader(f *os.File, tee io.Writer, tail *tailBuffer) *pipeReader {
	return &pipeReader{f: f, tee: tee, tail: tail, eof: make(chan struct{})}
}

func (p *pipeReader) Read(b []byte) (int, error) {
	n, err := p.f.Read(b)
	if n > 0 {
		if p.tail != nil {
			p.tail.Write(b[:n])
		}
		if p.tee != nil {
			_, _ = p.tee.Write(b[:n])
		}
	}
	if err != nil {
		p.eofOnce.Do(func() { close(p.eof) })
	}
	return n, err
}

func (p *pipeReader) Close() error {
	p.eofOnce.Do(func() { close(p.eof) })
	return p.f.Close()
}

func (p *pipeReader) closeAfterEOF(grace time.Duration) {
	select {
	case <-p.eof:
	case <-time.After(grace):
	}
	_ = p.Close()
}

// tailBuffer keeps the last bytes written to it, for Diagnose.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 4 << 10

func (t *tailBuffer) Write(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailMax {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailMax:]...)
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
