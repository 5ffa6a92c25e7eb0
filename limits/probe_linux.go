package limits

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// probePidsLimit is the pids.max of the fork probe group: room for the Go
// runtime's threads of the probe child, then forks must be refused.
const probePidsLimit = 32

// probeMemoryLimit is the memory limit of the OOM probe group: small enough
// that the child reaches it in a few milliseconds, large enough for the Go
// runtime (including a -race build) to start and reach the allocation.
const probeMemoryLimit = 8 << 20

// probe finds what is really enforced here. Every check that can be made
// real cheaply is: the memory check OOM-kills a child, the pids check has a
// fork refused, the tree-kill check kills a live child through the group,
// the namespace checks start children in new namespaces, the seccomp check
// installs a filter. Only the cpu quota is checked by write and read-back
// (a real measurement needs several 100 ms periods).
func (m *Manager) probe(ctx context.Context) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
		c  = &m.caps
	)
	set := func(f func()) {
		mu.Lock()
		defer mu.Unlock()
		f()
	}
	goProbe := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}

	goProbe(func() {
		err := runChild(ctx, childSpec{mode: childExit, cloneflags: nsFlags})
		set(func() {
			if c.Namespaces = err == nil; !c.Namespaces {
				c.setReason(ReasonNamespaces, "pid/mount/net/ipc/uts namespaces: %v", err)
			}
		})
	})
	goProbe(func() {
		err := runChild(ctx, childSpec{mode: childExit, cloneflags: nsFlags | syscall.CLONE_NEWUSER, userns: true})
		set(func() {
			if c.UserNamespace = err == nil; !c.UserNamespace {
				c.setReason(ReasonUserNamespace, "user namespace: %v", err)
			}
		})
	})
	goProbe(func() {
		abi, why := probeLandlock()
		ok, swhy := probeSeccomp()
		set(func() {
			if c.Landlock = abi; abi == 0 {
				c.setReason(ReasonLandlock, "%s", why)
			}
			if c.Seccomp = ok; !ok {
				c.setReason(ReasonSeccomp, "%s", swhy)
			}
		})
	})

	if m.inst.empty() {
		set(m.noCgroupReasons)
	} else {
		set(func() { c.CgroupCreate = true })
		goProbe(func() { m.probeMemory(ctx, set) })
		goProbe(func() {
			m.probePids(ctx, set)
			m.probeKill(ctx, set)
		})
		m.probeCPU(set)
	}
	wg.Wait()

	switch {
	case c.TreeKill:
		c.WallClock = true
	case c.Namespaces || c.UserNamespace:
		c.WallClock = true
		c.setReason(ReasonWallClock, "no cgroup tree kill; a deadline is enforced only by killing PID 1 of the worker's PID namespace")
	default:
		c.setReason(ReasonWallClock, "neither a cgroup tree kill nor a PID namespace is available")
	}
}

func (m *Manager) noCgroupReasons() {
	c := &m.caps
	for _, k := range []string{ReasonMemory, ReasonOOM, ReasonPids, ReasonCPU, ReasonTreeKill, ReasonCgroupFD} {
		if c.Reasons[k] == "" {
			c.setReason(k, "no usable cgroups "+SeeReason+"%s)", ReasonCgroups)
		}
	}
}

const nsFlags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

// probeGroup creates a throw-away group whose name cannot collide with an
// attempt (attempt names may not start with '.'); RemoveLeftovers sweeps
// any a crash leaves behind.
func (m *Manager) probeGroup(kind string, s Spec) (*Group, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return m.create(".probe-"+kind+"-"+hex.EncodeToString(b[:]), s)
}

// dispose kills and deletes a probe group; failures only cost a leftover
// that RemoveLeftovers will find.
func dispose(g *Group) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = g.Kill(ctx)
	_ = g.Delete()
}

func (m *Manager) probeMemory(ctx context.Context, set func(func())) {
	c := &m.caps
	if (m.v2Limits && !m.v2Memory) || (!m.v2Limits && m.inst.memory == "") {
		set(func() {
			if c.Reasons[ReasonMemory] == "" {
				c.setReason(ReasonMemory, "no memory controller")
			}
			c.setReason(ReasonOOM, "no memory controller")
		})
		return
	}
	g, err := m.probeGroup("mem", Spec{MemoryBytes: probeMemoryLimit})
	if err != nil {
		set(func() { c.setReason(ReasonMemory, "create probe group: %v", err) })
		return
	}
	defer dispose(g)
	cerr := runChild(ctx, childSpec{mode: childAlloc, group: g, useFD: m.fdUsable()})
	o, rerr := g.result()
	set(func() {
		killed := isSignal(cerr, syscall.SIGKILL)
		switch {
		case rerr != nil:
			c.setReason(ReasonMemory, "read oom counter: %v", rerr)
			c.setReason(ReasonOOM, "read oom counter: %v", rerr)
		case o.OOMKilled:
			c.MemoryLimit, c.OOMDetection = true, true
		case killed && !g.oomBaseOK:
			c.MemoryLimit = true
			c.setReason(ReasonOOM, "child was killed at the limit but the oom_kill counter is unreadable")
		case cerr == nil:
			c.setReason(ReasonMemory, "a child touched %d MiB in a %d MiB group and exited normally", probeAllocBytes>>20, probeMemoryLimit>>20)
		default:
			c.setReason(ReasonMemory, "probe child: %v (oom_kill counter did not move)", cerr)
		}
		if c.MemoryLimit && !m.swapBounded() && swapTotal() > 0 {
			c.setReason(ReasonMemorySwap, "swap accounting is off: swap use is not bounded by the memory limit")
		}
	})
}

func (m *Manager) swapBounded() bool {
	if m.v2Limits {
		return m.v2Swap
	}
	return m.memsw
}

func (m *Manager) probePids(ctx context.Context, set func(func())) {
	c := &m.caps
	if (m.v2Limits && !m.v2Pids) || (!m.v2Limits && m.inst.pids == "") {
		set(func() {
			if c.Reasons[ReasonPids] == "" {
				c.setReason(ReasonPids, "no pids controller")
			}
		})
		return
	}
	g, err := m.probeGroup("pids", Spec{Pids: probePidsLimit})
	if err != nil {
		set(func() { c.setReason(ReasonPids, "create probe group: %v", err) })
		return
	}
	defer dispose(g)
	cerr := runChild(ctx, childSpec{mode: childFork, group: g, useFD: m.fdUsable()})
	o, rerr := g.result()
	set(func() {
		switch {
		case rerr != nil:
			c.setReason(ReasonPids, "read pids.events: %v", rerr)
		case o.PidsLimitHits > 0:
			c.PidsLimit = true
		default:
			c.setReason(ReasonPids, "a child in a pids.max=%d group forked %d times (child: %v)", probePidsLimit, probeForks, cerr)
		}
	})
}

func (m *Manager) probeCPU(set func(func())) {
	c := &m.caps
	if (m.v2Limits && !m.v2CPU) || (!m.v2Limits && m.inst.cpu == "") {
		set(func() {
			if c.Reasons[ReasonCPU] == "" {
				c.setReason(ReasonCPU, "no cpu controller")
			}
		})
		return
	}
	const quota, period = 25_000, 50_000
	g, err := m.probeGroup("cpu", Spec{CPUQuotaMicros: quota, CPUPeriodMicros: period})
	if err != nil {
		set(func() { c.setReason(ReasonCPU, "create probe group: %v", err) })
		return
	}
	defer dispose(g)
	var ok bool
	if m.v2Limits {
		b, rerr := readFile(g.dirs.v2, "cpu.max")
		err, ok = rerr, strings.TrimSpace(string(b)) == fmt.Sprintf("%d %d", quota, period)
	} else {
		q, qerr := readUint(g.dirs.cpu, "cpu.cfs_quota_us")
		p, perr := readUint(g.dirs.cpu, "cpu.cfs_period_us")
		err, ok = errors.Join(qerr, perr), q == quota && p == period
	}
	set(func() {
		switch {
		case err != nil:
			c.setReason(ReasonCPU, "read back quota: %v", err)
		case !ok:
			c.setReason(ReasonCPU, "cpu quota did not read back as written")
		default:
			c.CPUQuota = true
		}
	})
}

func (m *Manager) probeKill(ctx context.Context, set func(func())) {
	c := &m.caps
	g, err := m.probeGroup("kill", Spec{})
	if err != nil {
		set(func() { c.setReason(ReasonTreeKill, "create probe group: %v", err) })
		return
	}
	defer dispose(g)
	useFD := m.fdUsable()
	ch, err := startChild(childSpec{mode: childHang, group: g, useFD: useFD})
	if err != nil && useFD {
		fdErr := err
		set(func() { c.setReason(ReasonCgroupFD, "clone3 CLONE_INTO_CGROUP: %v", fdErr) })
		useFD = false
		ch, err = startChild(childSpec{mode: childHang, group: g})
	}
	if err != nil {
		set(func() { c.setReason(ReasonTreeKill, "start probe child: %v", err) })
		return
	}
	fdOK, fdWhy := false, "no cgroup2 group to start children in"
	if useFD {
		fdOK, fdWhy = inV2Group(ch.cmd.Process.Pid, g.dirs.v2, m.lay.v2)
	}
	method, kerr := m.killTarget(g.dirs).kill(ctx)
	werr := ch.wait(ctx)
	pids, _ := g.Pids()
	set(func() {
		if c.CgroupFD = fdOK; !fdOK && c.Reasons[ReasonCgroupFD] == "" {
			c.setReason(ReasonCgroupFD, "%s", fdWhy)
		}
		switch {
		case kerr != nil:
			c.setReason(ReasonTreeKill, "kill: %v", kerr)
		case len(pids) > 0:
			c.setReason(ReasonTreeKill, "group not empty after kill: %v", pids)
		case !isSignal(werr, syscall.SIGKILL):
			c.setReason(ReasonTreeKill, "child did not die by SIGKILL: %v", werr)
		case method == "":
			c.setReason(ReasonTreeKill, "no cgroup.kill and no freezer; only a signal loop is left")
		default:
			c.TreeKill, c.TreeKillMethod = true, method
		}
	})
}

// fdUsable reports whether children can be started with CgroupFD.
func (m *Manager) fdUsable() bool { return m.inst.v2 != "" }

// inV2Group checks /proc/<pid>/cgroup: the child must already be in the
// group when Start returns, which is what CLONE_INTO_CGROUP promises.
func inV2Group(pid int, dir string, h *hierarchy) (bool, string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false, err.Error()
	}
	rel, err := filepath.Rel(h.mount, dir)
	if err != nil {
		return false, err.Error()
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			// Our own cgroup2 path may be below the mount root; compare
			// the tail.
			if p == "/"+rel || strings.HasSuffix(p, "/"+rel) {
				return true, ""
			}
			return false, fmt.Sprintf("child started in %s, not in %s", p, "/"+rel)
		}
	}
	return false, "no cgroup2 entry in /proc/pid/cgroup"
}

func isSignal(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// swapTotal returns SwapTotal from /proc/meminfo in kB (0 if unknown).
func swapTotal() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "SwapTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.ParseUint(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}
