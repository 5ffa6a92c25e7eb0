package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/sandbox/internal/testplugin"
)

// threadGroup is a ThreadPlacement for tests: a cgroup2 group (testGroup)
// and a v1 pids group that the launcher thread enters for the fork by
// writing 0 to its tasks file, as limits.Group.EnterThread does.
type threadGroup struct {
	*testGroup
	v1, home string // the v1 group; the test process's own pids group
	fail     error  // EnterThread returns it
	places   atomic.Int32
}

func newThreadGroup(t *testing.T) *threadGroup {
	t.Helper()
	g := &threadGroup{testGroup: newTestGroup(t)}
	own := ""
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && f[1] == "pids" {
			own = f[2]
		}
	}
	if own == "" {
		t.Skip("no v1 pids hierarchy: a cgroup2-only host places by CLONE_INTO_CGROUP alone")
	}
	g.home = filepath.Join("/sys/fs/cgroup/pids", own)
	g.v1 = filepath.Join(g.home, "sbx-thread-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(g.v1, 0o755); err != nil {
		skipOrFail(t, "cannot create a v1 pids group: %v", err)
	}
	t.Cleanup(func() { os.Remove(g.v1) })
	return g
}

func (g *threadGroup) Place(pid int) error {
	g.places.Add(1)
	return g.testGroup.Place(pid)
}

func (g *threadGroup) EnterThread() (func() error, bool, error) {
	if g.fail != nil {
		return nil, false, g.fail
	}
	if err := os.WriteFile(filepath.Join(g.v1, "tasks"), []byte("0"), 0); err != nil {
		return nil, false, nil
	}
	return func() error { return os.WriteFile(filepath.Join(g.home, "tasks"), []byte("0"), 0) }, true, nil
}

// pidsRel is a pids group's path as /proc/<pid>/cgroup shows it.
func pidsRel(dir string) string {
	return filepath.Join("/", strings.TrimPrefix(dir, "/sys/fs/cgroup/pids"))
}

// pidsGroupOf is the pids line of a task's cgroups.
func pidsGroupOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && f[1] == "pids" {
			return f[2]
		}
	}
	return ""
}

// TestThreadPlacementForksIntoTheGroups: with a ThreadPlacement the init
// is forked by the launcher thread from inside its groups: the worker
// is in the v1 group and the cgroup2 group without Place, and every
// thread of the supervisor is back in its own group.
func TestThreadPlacementForksIntoTheGroups(t *testing.T) {
	forEachInit(t, func(t *testing.T, use func(*Config)) {
		f := newFixture(t)
		g := newThreadGroup(t)
		cfg := f.isolated()
		use(&cfg)
		cfg.Placement = g
		cfg.KillHook = g.kill
		l := mustStart(t, cfg)
		defer l.stop()
		if n := g.places.Load(); n != 0 {
			t.Errorf("Place called %d times for a worker forked in its groups", n)
		}
		if !l.sb.Report().Placed {
			t.Error("report does not say placed")
		}
		rel := pidsRel(g.v1)
		if got := pidsGroupOf(t, "/proc/"+strconv.Itoa(l.sb.Pid())+"/cgroup"); got != rel {
			t.Errorf("worker in pids group %q, want %q", got, rel)
		}
		p, err := l.prober.Probe(testplugin.ProbeArgs{})
		if err != nil {
			t.Fatal(err)
		}
		checkCgroupView(t, l.sb.Pid(), p.Cgroup, g.name())
		home := pidsRel(g.home)
		tasks, _ := filepath.Glob("/proc/self/task/*/cgroup")
		for _, task := range tasks {
			if got := pidsGroupOf(t, task); got != home {
				t.Errorf("%s in pids group %q, want %q (a launcher thread left inside)", task, got, home)
			}
		}
	})
}

// TestThreadPlacementFailureRetiresTheLauncherThread: a thread placement
// that may have left the launcher thread in a group fails the launch,
// and the next launch forks from a thread of its own.
func TestThreadPlacementFailureRetiresTheLauncherThread(t *testing.T) {
	f := newFixture(t)
	g := newThreadGroup(t)
	g.fail = errors.New("stuck half way")
	cfg := f.isolated()
	cfg.Placement = g
	cfg.KillHook = g.kill
	if l, err := start(t, cfg); err == nil {
		l.stop()
		t.Fatal("a launch whose thread placement failed started")
	} else if !strings.Contains(err.Error(), "stuck half way") {
		t.Fatalf("launch error %v, want the placement's", err)
	}
	l := mustStart(t, f.isolated())
	defer l.stop()
	if _, err := l.prober.Ping("after"); err != nil {
		t.Fatalf("worker launched after a retired launcher thread: %v", err)
	}
}
