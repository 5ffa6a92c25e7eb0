package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

// Releasing a gated init: placement in its groups, its jail's config over
// the gate, and the process attributes the spawn uses.

// release places the gated init, sends it its config and waits until it
// has exec'd the worker (the gate reaches EOF) or reported a failure.
func (s *Sandbox) release(ctx context.Context, gp *gatedProc, spawn time.Duration) error {
	defer gp.gate.Close()
	pid := gp.cmd.Process.Pid
	rep := Report{Mode: s.cfg.Mode, Gated: true, Spawn: spawn}
	placeBegin := time.Now()
	if s.cfg.Mode == ModeIsolated {
		rep.Namespaces = s.cfg.Namespaces
	}
	if p := s.cfg.Placement; p != nil {
		if !gp.placed {
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
	env := s.env
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
		Sockets:    gate.Tmpfs{Bytes: SocketDirBytes, Inodes: SocketDirInodes},
		Tmp:        gate.Tmpfs{Bytes: uint64(c.TmpfsBytes), Inodes: uint64(c.TmpfsInodes)},
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
