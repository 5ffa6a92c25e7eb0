package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
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
	s.mu.Unlock()
	if !started {
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
	s.mu.Unlock()

	gated := s.cfg.gated()
	var (
		gp  *gatedProc
		err error
	)
	begin := time.Now()
	switch {
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
	if !gated {
		s.mu.Lock()
		s.report = Report{Mode: s.cfg.Mode, Spawn: spawn}
		s.mu.Unlock()
		return nil
	}
	if err := s.release(ctx, gp, spawn); err != nil {
		s.abort()
		return err
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
