package limits

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// childSpec describes one probe child.
type childSpec struct {
	mode       string
	group      *Group // placed here before it is released; nil for none
	useFD      bool   // start it inside group's v2 dir (CLONE_INTO_CGROUP)
	cloneflags uintptr
	userns     bool // map our uid/gid to 0 inside a new user namespace
}

type probeChild struct {
	cmd  *exec.Cmd
	gate *os.File // write end; one byte releases the child
	done chan error
}

// startChild starts a probe child the same way the launcher must start a
// worker: inside the v2 group from the first instruction, gated until Place
// has put it into the v1 groups, and only then released.
func startChild(s childSpec) (*probeChild, error) {
	cmd := &exec.Cmd{
		Path: "/proc/self/exe",
		Args: []string{probeArg0},
		Env:  []string{probeEnv + "=" + s.mode},
	}
	if v, ok := os.LookupEnv("GORACE"); ok {
		// A -race build otherwise sleeps 1 s at exit (atexit_sleep_ms);
		// tests set GORACE to keep the probe fast.
		cmd.Env = append(cmd.Env, "GORACE="+v)
	}
	attr := &syscall.SysProcAttr{Cloneflags: s.cloneflags}
	if s.userns {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	if s.group != nil && s.useFD {
		if fd, ok := s.group.CgroupFD(); ok {
			attr.UseCgroupFD, attr.CgroupFD = true, fd
		}
	}
	cmd.SysProcAttr = attr
	var r, w *os.File
	if s.mode != childExit {
		var err error
		if r, w, err = os.Pipe(); err != nil {
			return nil, fmt.Errorf("limits: probe gate pipe: %w", err)
		}
		cmd.ExtraFiles = []*os.File{r}
	}
	if err := cmd.Start(); err != nil {
		if r != nil {
			r.Close()
			w.Close()
		}
		return nil, fmt.Errorf("limits: start probe child (%s): %w", s.mode, err)
	}
	ch := &probeChild{cmd: cmd, gate: w, done: make(chan error, 1)}
	go func() { ch.done <- cmd.Wait() }()
	if r != nil {
		r.Close()
	}
	if s.group != nil {
		if err := s.group.Place(cmd.Process.Pid); err != nil {
			_ = cmd.Process.Kill()
			ch.close()
			<-ch.done
			return nil, err
		}
	}
	if s.mode == childAlloc || s.mode == childFork {
		if _, err := w.Write([]byte{1}); err != nil {
			_ = cmd.Process.Kill()
			ch.close()
			<-ch.done
			return nil, fmt.Errorf("limits: release probe child: %w", err)
		}
	}
	return ch, nil
}

func (c *probeChild) close() {
	if c.gate != nil {
		c.gate.Close()
	}
}

// wait returns the child's exit error; if ctx ends first the child is
// killed (its group is disposed of by the caller).
func (c *probeChild) wait(ctx context.Context) error {
	defer c.close()
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("limits: probe child (%s): %w", c.cmd.Env[0], ctx.Err())
	}
}

func runChild(ctx context.Context, s childSpec) error {
	ch, err := startChild(s)
	if err != nil {
		return err
	}
	return ch.wait(ctx)
}
