package limitstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"golang.org/x/sys/unix"
)

// NewManager returns a limits.Manager whose parent group is unique to this
// test (unless opts.Name is set) and registers CheckNoLeaks as a cleanup.
// Cleanups run last-in first-out, so register it before anything that
// creates groups: call NewManager first in the test.
func NewManager(t testing.TB, opts limits.Options) *limits.Manager {
	t.Helper()
	if opts.Name == "" {
		opts.Name = UniqueName(t)
	}
	m, err := limits.NewManager(opts)
	if err != nil {
		t.Fatalf("limits.NewManager: %v", err)
	}
	t.Cleanup(func() { CheckNoLeaks(t, m) })
	return m
}

// CheckNoLeaks fails the test if anything of m is left: a group directory
// below the instance in any hierarchy (every group must have been
// Deleted), or a live process in any cgroup under the parent group <Name>.
// Zombies are dead and are not leaks; those whose parent is this process
// are reaped. Afterwards it closes m (killing and removing what leaked, so
// later tests start clean) and checks that no directory of <Name> remains,
// which holds when the name is unique to the test.
func CheckNoLeaks(t testing.TB, m *limits.Manager) {
	t.Helper()
	for _, d := range m.InstanceDirs() {
		ents, err := os.ReadDir(d)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("leak check: %v", err)
			}
			continue
		}
		for _, e := range ents {
			if e.IsDir() {
				t.Errorf("leak check: leftover cgroup %s", filepath.Join(d, e.Name()))
			}
		}
	}
	name := m.Options().Name
	if live := waitNoProcsIn(name, time.Second); len(live) > 0 {
		t.Errorf("leak check: live processes in cgroups of %s: %v", name, live)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Errorf("leak check: close manager: %v", err)
	}
	if strings.HasPrefix(name, "cstest-") {
		for _, d := range m.ParentDirs() {
			if _, err := os.Lstat(d); err == nil {
				t.Errorf("leak check: parent group %s still exists after Close", d)
				_ = removeAll(d)
			}
		}
	}
}

// waitNoProcsIn waits until no live process sits in a cgroup path that
// contains /<name>/ or ends in /<name>, reaping our own zombies, and
// returns what is still alive at the deadline.
func waitNoProcsIn(name string, bound time.Duration) []string {
	deadline := time.Now().Add(bound)
	for {
		live := procsIn(name)
		if len(live) == 0 || time.Now().After(deadline) {
			return live
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func procsIn(name string) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var live []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cgroup")
		if err != nil || !mentions(string(b), name) {
			continue
		}
		if st, ppid, ok := procState(pid); ok && st == 'Z' {
			if ppid == os.Getpid() {
				reap(pid)
			}
			continue
		}
		if exists(pid) {
			live = append(live, fmt.Sprintf("%d(%s)", pid, cmdline(pid)))
		}
	}
	return live
}

func mentions(procCgroup, name string) bool {
	for _, line := range strings.Split(procCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		p := parts[2]
		if strings.Contains(p, "/"+name+"/") || strings.HasSuffix(p, "/"+name) {
			return true
		}
	}
	return false
}

// AssertGone fails the test unless every pid is dead within a few seconds:
// kill(pid, 0) says ESRCH, or the process is a zombie (a zombie whose
// parent is this process, e.g. an orphan reparented to us as subreaper, is
// reaped). Use it with pids recorded while the processes were alive.
func AssertGone(t testing.TB, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for {
			if gone(pid) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("pid %d (%s) is still alive", pid, cmdline(pid))
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func gone(pid int) bool {
	if !exists(pid) {
		return true
	}
	st, ppid, ok := procState(pid)
	if !ok {
		return !exists(pid)
	}
	if st == 'Z' {
		if ppid == os.Getpid() {
			reap(pid)
		}
		return true
	}
	return false
}

func exists(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// procState returns the state letter and parent pid from /proc/pid/stat.
func procState(pid int) (byte, int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // comm may contain spaces and ')'
	if i < 0 || i+2 >= len(s) {
		return 0, 0, false
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return f[0][0], ppid, true
}

// reap collects one zombie child by pid; never wait(-1), which would steal
// exit statuses from os/exec.
func reap(pid int) {
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// removeAll removes a leaked cgroup tree bottom-up (rmdir only: cgroupfs
// files cannot be unlinked).
func removeAll(dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := unix.Rmdir(dirs[i]); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("rmdir %s: %w", dirs[i], err))
		}
	}
	return errors.Join(errs...)
}

// BecomeSubreaper makes this process the reaper of orphaned descendants
// (PR_SET_CHILD_SUBREAPER), so that a double-forked grandchild comes back
// to the test, where AssertGone can reap it, instead of lingering as a
// zombie of PID 1.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
}
