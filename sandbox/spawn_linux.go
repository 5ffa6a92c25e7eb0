package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Spawning a worker: the gated init (blocked on its gate until it is placed
// and configured) or a plain child, and the wait for its exit.

// gatedProc is an init process blocked on its gate.
type gatedProc struct {
	cmd    *exec.Cmd
	gate   *os.File
	stdout *os.File
	stderr *os.File
	// placed: forked in its groups (ThreadPlacement); Place is not needed.
	placed bool
	netns  *netnsLease // joined instead of CLONE_NEWNET; nil: fresh
	// netnsFD and workFD are where the init finds the namespace to join
	// and the work mount to attach (0: none inherited).
	netnsFD, workFD int
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
	initPath := cfg.GatePath
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
	// Without seccomp the worker could have opened any socket in the
	// namespace: it is not kept (see netnsPool).
	s.netns.end(s.cfg.Seccomp)
	s.mu.Lock()
	s.waitErr = err
	s.state = s.cmd.ProcessState
	s.mu.Unlock()
	close(s.done)
}
