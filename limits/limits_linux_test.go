package limits_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/limits/limitstest"
	"golang.org/x/sys/unix"
)

// newManager gives the test its own parent group and leak check.
func newManager(t *testing.T) *limits.Manager {
	t.Helper()
	limitstest.RequireRoot(t)
	m := limitstest.NewManager(t, limits.Options{})
	c := m.Capabilities()
	limitstest.RequireIsolation(t, c.CgroupCreate, "cannot create cgroups: %s", c.Reasons[limits.ReasonCgroups])
	return m
}

// newGroup creates a group that is killed and deleted when the test ends.
func newGroup(t *testing.T, m *limits.Manager, name string, s limits.Spec) *limits.Group {
	t.Helper()
	g, err := m.Create(name, s)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Kill(ctx); err != nil {
			t.Errorf("cleanup kill: %v", err)
		}
		if err := g.Delete(); err != nil {
			t.Errorf("cleanup delete: %v", err)
		}
	})
	return g
}

func kill(t *testing.T, g *limits.Group) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Kill(ctx); err != nil {
		t.Fatalf("kill: %v", err)
	}
}

func TestProbeThisHost(t *testing.T) {
	m := newManager(t)
	c := m.Capabilities()
	b, _ := json.MarshalIndent(c, "", "  ")
	t.Logf("capabilities:\n%s", b)

	// The containerd library detects the mode independently.
	want := map[cgroups.CGMode]string{
		cgroups.Unavailable: limits.ModeNone, cgroups.Legacy: limits.ModeV1,
		cgroups.Hybrid: limits.ModeHybrid, cgroups.Unified: limits.ModeV2,
	}[cgroups.Mode()]
	if c.CgroupMode != want {
		t.Errorf("cgroup mode %q, containerd says %q", c.CgroupMode, want)
	}
	if exp := os.Getenv("EXPECT_CGROUP_MODE"); exp != "" && c.CgroupMode != exp {
		t.Errorf("cgroup mode %q, EXPECT_CGROUP_MODE=%q", c.CgroupMode, exp)
	}
	if !limitstest.Required() {
		return
	}
	// This project's hosts are hybrid and enforce everything.
	if cgroups.Mode() == cgroups.Hybrid && c.CgroupMode != limits.ModeHybrid {
		t.Errorf("mode %q on a hybrid host", c.CgroupMode)
	}
	for _, f := range []struct {
		ok     bool
		reason string
	}{
		{c.CgroupCreate, limits.ReasonCgroups}, {c.MemoryLimit, limits.ReasonMemory},
		{c.OOMDetection, limits.ReasonOOM}, {c.PidsLimit, limits.ReasonPids},
		{c.CPUQuota, limits.ReasonCPU}, {c.TreeKill, limits.ReasonTreeKill},
		{c.CgroupFD, limits.ReasonCgroupFD}, {c.WallClock, limits.ReasonWallClock},
		{c.Namespaces, limits.ReasonNamespaces}, {c.UserNamespace, limits.ReasonUserNamespace},
		{c.Landlock > 0, limits.ReasonLandlock}, {c.Seccomp, limits.ReasonSeccomp},
	} {
		if !f.ok {
			t.Errorf("%s not enforced: %s", f.reason, c.Reasons[f.reason])
		}
	}
	if c.TreeKillMethod != limits.KillMethodCgroupKill && cgroups.Mode() != cgroups.Legacy {
		t.Errorf("tree kill via %q, want cgroup.kill", c.TreeKillMethod)
	}
	if err := c.Check(limits.Spec{MemoryBytes: 32 << 20, Pids: 16, CPUQuotaMicros: 20_000}, true); err != nil {
		t.Errorf("check: %v", err)
	}
}

// The probe runs again, past the process-wide cache, and finds the
// memory limit. How long it takes is a benchmark's question
// (BenchmarkProbeUncached), not a test's: this test's bound of 2 s
// failed once under -race on a loaded CI machine (2.9 s, against 60-80
// ms typical).
func TestProbeUncached(t *testing.T) {
	m := newManager(t)
	begin := time.Now()
	c := limits.ProbeUncached(m)
	t.Logf("uncached probe: %v", time.Since(begin))
	limitstest.RequireIsolation(t, c.MemoryLimit, "memory: %s", c.Reasons[limits.ReasonMemory])
}

// A worker must be in every group before it runs anything.
func TestPlacementBeforeRun(t *testing.T) {
	m := newManager(t)
	c := m.Capabilities()
	limitstest.RequireIsolation(t, c.MemoryLimit && c.PidsLimit && c.CPUQuota, "limits: %v", c.Reasons)
	g := newGroup(t, m, "placement", limits.Spec{MemoryBytes: 256 << 20, Pids: 64, CPUQuotaMicros: 50_000})
	h := startHelper(t, g, "cgroup", "")
	var lines []string
	for {
		l, err := h.out.ReadString('\n')
		if l != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
		if err != nil {
			break
		}
	}
	if err := h.wait(t); err != nil {
		t.Fatalf("helper: %v", err)
	}
	suffix := "/" + m.Options().Instance + "/placement"
	in := 0
	for _, l := range lines {
		if strings.HasSuffix(l, suffix) {
			in++
		}
	}
	if want := len(g.Dirs()); in != want {
		t.Fatalf("helper in %d of %d groups:\n%s\ndirs %v", in, want, strings.Join(lines, "\n"), g.Dirs())
	}
}

func TestOOMKilledDecidedByCounter(t *testing.T) {
	m := newManager(t)
	c := m.Capabilities()
	limitstest.RequireIsolation(t, c.MemoryLimit && c.OOMDetection, "memory: %s %s", c.Reasons[limits.ReasonMemory], c.Reasons[limits.ReasonOOM])

	g := newGroup(t, m, "oom", limits.Spec{MemoryBytes: 32 << 20})
	h := startHelper(t, g, "alloc", "256")
	err := h.wait(t)
	if sig, ok := exitSignal(err); !ok || sig != syscall.SIGKILL {
		t.Fatalf("helper allocating 256 MiB in 32 MiB: %v", err)
	}
	kill(t, g)
	o, err := g.Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("oom outcome: %+v", o)
	if !o.OOMKilled || o.OOMKills < 1 {
		t.Fatalf("not reported as OOM: %+v", o)
	}
	// The kernel may charge a page or two past the limit (charges that
	// cannot fail) before it kills.
	if o.PeakMemoryBytes > 33<<20 || o.PeakMemoryBytes < 16<<20 {
		t.Errorf("peak %d outside (16 MiB, 33 MiB]", o.PeakMemoryBytes)
	}

	// Under the limit: no OOM. A -race helper needs several times its heap
	// for shadow memory, so the allocation is small.
	g2 := newGroup(t, m, "fits", limits.Spec{MemoryBytes: 32 << 20})
	h2 := startHelper(t, g2, "alloc", "2")
	if l := h2.line(t); l != "allocated" {
		t.Fatalf("helper said %q", l)
	}
	if err := h2.wait(t); err != nil {
		t.Fatalf("helper under the limit: %v", err)
	}
	o2, err := g2.Result()
	if err != nil {
		t.Fatal(err)
	}
	if o2.OOMKilled {
		t.Fatalf("reported OOM for a child under the limit: %+v", o2)
	}

	// A SIGKILL that is not an OOM kill is not reported as one.
	g3 := newGroup(t, m, "sigkill", limits.Spec{MemoryBytes: 32 << 20})
	h3 := startHelper(t, g3, "sleep", "")
	h3.line(t)
	_ = syscall.Kill(h3.pid(), syscall.SIGKILL)
	if sig, _ := exitSignal(h3.wait(t)); sig != syscall.SIGKILL {
		t.Fatal("helper not killed")
	}
	if o3, _ := g3.Result(); o3.OOMKilled {
		t.Fatalf("plain SIGKILL reported as OOM: %+v", o3)
	}
}

func TestPidsLimitContainsForkBomb(t *testing.T) {
	m := newManager(t)
	c := m.Capabilities()
	limitstest.RequireIsolation(t, c.PidsLimit && c.TreeKill, "pids %s / kill %s", c.Reasons[limits.ReasonPids], c.Reasons[limits.ReasonTreeKill])

	g := newGroup(t, m, "forkbomb", limits.Spec{Pids: 16})
	h := startHelper(t, g, "forkbomb", "")
	var (
		mu   sync.Mutex
		seen = map[int]bool{}
	)
	go func() {
		sc := bufio.NewScanner(h.out)
		for sc.Scan() {
			if pid, err := strconv.Atoi(sc.Text()); err == nil {
				mu.Lock()
				seen[pid] = true
				mu.Unlock()
			}
		}
	}()
	// Watch the group until the kernel has refused a fork: a fixed window
	// (it was 700 ms) ended before the bomb reached its limit on a loaded
	// host, where each copy of this test binary takes long to start.
	deadline := time.Now().Add(time.Minute)
	maxProcs := 0
	var o limits.Outcome
	for {
		pids, err := g.Pids()
		if err != nil {
			t.Fatal(err)
		}
		maxProcs = max(maxProcs, len(pids))
		mu.Lock()
		for _, p := range pids {
			seen[p] = true
		}
		mu.Unlock()
		if o, err = g.Result(); err != nil {
			t.Fatal(err)
		}
		if o.PidsLimitHits > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	recorded := len(seen) // the reader of the helper's output still writes
	mu.Unlock()
	t.Logf("fork bomb: at most %d processes seen, %d pids recorded, outcome %+v", maxProcs, recorded, o)
	if maxProcs > 16 || (o.PidsPeak > 16) {
		t.Fatalf("pids limit 16 exceeded: %d processes, peak %d", maxProcs, o.PidsPeak)
	}
	if o.PidsLimitHits == 0 {
		t.Fatalf("no fork was refused: %+v", o)
	}
	kill(t, g)
	if pids, _ := g.Pids(); len(pids) != 0 {
		t.Fatalf("left after kill: %v", pids)
	}
	h.wait(t)
	mu.Lock()
	all := make([]int, 0, len(seen))
	for p := range seen {
		all = append(all, p)
	}
	mu.Unlock()
	limitstest.AssertGone(t, all...)
}

// A grandchild in its own session that ignores SIGTERM escapes pid and
// process-group kills; the cgroup kill takes it.
func TestKillTakesSetsidGrandchild(t *testing.T) {
	m := newManager(t)
	c := m.Capabilities()
	limitstest.RequireIsolation(t, c.TreeKill, "tree kill: %s", c.Reasons[limits.ReasonTreeKill])
	g := newGroup(t, m, "doublefork", limits.Spec{})
	testDoubleFork(t, g, func() { kill(t, g) })
}

func testDoubleFork(t *testing.T, g *limits.Group, doKill func()) {
	t.Helper()
	h := startHelperFD(t, g, "doublefork", "", true)
	orphan, err := strconv.Atoi(h.line(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.wait(t); err != nil {
		t.Fatalf("middle process: %v", err)
	}
	pids, err := g.Pids()
	if err != nil || !slices.Contains(pids, orphan) {
		t.Fatalf("orphan %d not tracked in the group: %v %v", orphan, pids, err)
	}
	// SIGTERM to it and to its process group does nothing.
	_ = unix.Kill(orphan, unix.SIGTERM)
	_ = unix.Kill(-orphan, unix.SIGTERM)
	time.Sleep(50 * time.Millisecond)
	if err := unix.Kill(orphan, 0); err != nil {
		t.Fatalf("orphan died of SIGTERM: %v", err)
	}
	doKill()
	limitstest.AssertGone(t, orphan, h.pid())
	if pids, _ := g.Pids(); len(pids) != 0 {
		t.Fatalf("left after kill: %v", pids)
	}
}

// The fallback path (no cgroup.kill): v1 freezer, SIGKILL, thaw. The helper
// is placed with Place only, as on a pure v1 host.
func TestKillFreezerFallback(t *testing.T) {
	m := newManager(t)
	limitstest.RequireIsolation(t, limits.ForceFreezer(m) == nil, "no v1 freezer hierarchy")
	g := newGroup(t, m, "freezer", limits.Spec{Pids: 64})
	h := startHelperFD(t, g, "doublefork", "", false)
	orphan, err := strconv.Atoi(h.line(t))
	if err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	method, err := limits.KillMethod(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	if method != limits.KillMethodFreezer {
		t.Errorf("method %q", method)
	}
	limitstest.AssertGone(t, orphan)
}

func TestCPUQuotaBoundsBusyLoop(t *testing.T) {
	m := newManager(t)
	c := m.Capabilities()
	limitstest.RequireIsolation(t, c.CPUQuota, "cpu: %s", c.Reasons[limits.ReasonCPU])
	g := newGroup(t, m, "busy", limits.Spec{CPUQuotaMicros: 20_000, CPUPeriodMicros: 100_000})
	// The loop runs until it has had 300 ms of CPU, not for a wall time:
	// on cores other work keeps busy, a second of wall time gave it less
	// than its quota (122 ms in 1.47 s), so the quota never had to throttle.
	begin := time.Now()
	h := startHelper(t, g, "spin-cpu", "300")
	if err := h.wait(t); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(begin)
	o, err := g.Result()
	if err != nil {
		t.Fatal(err)
	}
	ratio := float64(o.CPUUsageNanos) / float64(wall.Nanoseconds())
	t.Logf("busy loop: cpu %v over %v wall, ratio %.3f, throttled %d periods", time.Duration(o.CPUUsageNanos), wall, ratio, o.CPUThrottledPeriods)
	if ratio >= 0.5 || ratio < 0.05 {
		t.Fatalf("cpu/wall ratio %.3f with a 20%% quota", ratio)
	}
	if o.CPUThrottledPeriods == 0 {
		t.Errorf("never throttled")
	}
}

// Kill is idempotent and may race with Delete, Result and the waiter.
func TestKillIdempotentAndRaceSafe(t *testing.T) {
	m := newManager(t)
	c := m.Capabilities()
	limitstest.RequireIsolation(t, c.TreeKill, "tree kill: %s", c.Reasons[limits.ReasonTreeKill])
	for round := 0; round < 3; round++ {
		g, err := m.Create("race-"+strconv.Itoa(round), limits.Spec{Pids: 64})
		if err != nil {
			t.Fatal(err)
		}
		var hs []*helper
		for i := 0; i < 3; i++ {
			hs = append(hs, startHelper(t, g, "sleep", ""))
		}
		for _, h := range hs {
			h.line(t)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := g.Kill(ctx); err != nil {
					errs <- err
				}
			}()
		}
		wg.Add(1)
		go func() { // the waiter: reap, read the result, delete
			defer wg.Done()
			for _, h := range hs {
				<-h.done
			}
			if _, err := g.Result(); err != nil {
				errs <- err
			}
			for {
				err := g.Delete()
				if err == nil {
					return
				}
				if !errors.Is(err, limits.ErrNotEmpty) {
					errs <- err
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		wg.Add(1)
		go func() { // a concurrent cleanup path
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := g.Delete(); err != nil && !errors.Is(err, limits.ErrNotEmpty) {
					errs <- err
				}
				_, _ = g.Pids()
				_, _ = g.CgroupFD()
				time.Sleep(100 * time.Microsecond)
			}
		}()
		wg.Wait()
		cancel()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
		// Everything after the fact is a no-op.
		if err := g.Kill(context.Background()); err != nil {
			t.Errorf("kill after delete: %v", err)
		}
		if err := g.Delete(); err != nil {
			t.Errorf("second delete: %v", err)
		}
		if _, ok := g.CgroupFD(); ok {
			t.Error("fd after delete")
		}
		if _, err := g.Result(); err != nil {
			t.Errorf("result after delete: %v", err)
		}
		if err := g.Place(os.Getpid()); !errors.Is(err, limits.ErrDeleted) {
			t.Errorf("place after delete: %v", err)
		}
		for _, h := range hs {
			if sig, _ := exitSignal(h.err); sig != syscall.SIGKILL {
				t.Errorf("helper exit: %v", h.err)
			}
		}
	}
}

// Kill of a group whose directories someone else removed (the ENOENT race
// that made go-plugin Kills take 2 s) returns at once.
func TestKillAfterExternalRemoval(t *testing.T) {
	m := newManager(t)
	g, err := m.Create("gone", limits.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range g.Dirs() {
		if err := unix.Rmdir(d); err != nil {
			t.Fatal(err)
		}
	}
	begin := time.Now()
	if err := g.Kill(context.Background()); err != nil {
		t.Fatalf("kill: %v", err)
	}
	// At once: nothing to wait for. The bound is loose for a loaded
	// machine, and still half of the 2 s the race took.
	if d := time.Since(begin); d > time.Second {
		t.Errorf("kill of a removed group took %v", d)
	}
	if err := g.Delete(); err != nil {
		t.Fatalf("delete: %v", err)
	}
}

func TestRemoveLeftoversOfEarlierBoot(t *testing.T) {
	limitstest.RequireRoot(t)
	name := limitstest.UniqueName(t)
	// The current boot's manager comes first so its leak check runs last.
	cur := limitstest.NewManager(t, limits.Options{Name: name, Instance: "boot-2"})
	limitstest.RequireIsolation(t, cur.Capabilities().TreeKill, "tree kill: %s", cur.Capabilities().Reasons[limits.ReasonTreeKill])

	old, err := limits.NewManager(limits.Options{Name: name, Instance: "boot-1"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := old.Create("attempt-7", limits.Spec{Pids: 32, MemoryBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	h := startHelper(t, g, "doublefork", "")
	orphan, _ := strconv.Atoi(h.line(t))
	h.wait(t)
	// A group of the current boot must survive the sweep.
	mine := newGroup(t, cur, "attempt-1", limits.Spec{})
	// The old supervisor "crashes": nothing is closed or killed.

	removed, err := cur.RemoveLeftovers(context.Background())
	if err != nil {
		t.Fatalf("remove leftovers: %v", err)
	}
	t.Logf("removed %v", removed)
	for _, want := range []string{name + "/boot-1", name + "/boot-1/attempt-7"} {
		if !slices.Contains(removed, want) {
			t.Errorf("%s not reported removed", want)
		}
	}
	for _, r := range removed {
		if strings.Contains(r, "boot-2") {
			t.Errorf("removed a group of the current boot: %s", r)
		}
	}
	limitstest.AssertGone(t, orphan)
	for _, d := range g.Dirs() {
		if _, err := os.Lstat(d); err == nil {
			t.Errorf("leftover %s still exists", d)
		}
		if _, err := os.Lstat(filepath.Dir(d)); err == nil {
			t.Errorf("leftover instance %s still exists", filepath.Dir(d))
		}
	}
	for _, d := range mine.Dirs() {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("current group %s removed: %v", d, err)
		}
	}
	// The old handles now see a removed group: no errors, no hangs.
	if err := g.Kill(context.Background()); err != nil {
		t.Errorf("kill stale: %v", err)
	}
	if err := g.Delete(); err != nil {
		t.Errorf("delete stale: %v", err)
	}
	if err := old.Close(context.Background()); err != nil {
		t.Errorf("close stale manager: %v", err)
	}
	again, err := cur.RemoveLeftovers(context.Background())
	if err != nil || len(again) != 0 {
		t.Errorf("second sweep: %v %v", again, err)
	}
}

func TestCreateRejects(t *testing.T) {
	m := newManager(t)
	for _, n := range []string{"", "../x", "a/b", ".probe-x"} {
		if _, err := m.Create(n, limits.Spec{}); !errors.Is(err, limits.ErrInvalidName) {
			t.Errorf("name %q: %v", n, err)
		}
	}
	if _, err := m.Create("x", limits.Spec{Pids: -1}); !errors.Is(err, limits.ErrInvalidSpec) {
		t.Errorf("negative pids: %v", err)
	}
	newGroup(t, m, "dup", limits.Spec{})
	if _, err := m.Create("dup", limits.Spec{}); !errors.Is(err, limits.ErrExists) {
		t.Errorf("duplicate: %v", err)
	}
	g := newGroup(t, m, "busy", limits.Spec{})
	h := startHelper(t, g, "sleep", "")
	h.line(t)
	if err := g.Delete(); !errors.Is(err, limits.ErrNotEmpty) {
		t.Errorf("delete with a live process: %v", err)
	}
	if err := g.Place(-1); err == nil {
		t.Error("place of pid -1")
	}
}

// recordingTB captures Errorf so a test can check that the leak checker
// really reports leaks.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestLeakCheckReportsLeaks(t *testing.T) {
	m := newManager(t)
	g, err := m.Create("leaked", limits.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	h := startHelper(t, g, "sleep", "")
	h.line(t)
	rec := &recordingTB{TB: t}
	limitstest.CheckNoLeaks(rec, m) // also closes m: kills and removes
	joined := strings.Join(rec.errs, "\n")
	if !strings.Contains(joined, "leftover cgroup") || !strings.Contains(joined, "live processes") {
		t.Fatalf("leak check missed the leak:\n%s", joined)
	}
	if sig, _ := exitSignal(h.wait(t)); sig != syscall.SIGKILL {
		t.Fatal("the leaked process was not killed by Close")
	}
	if err := g.Delete(); err != nil {
		t.Fatalf("delete after close: %v", err)
	}
}

// The probe run by an unprivileged user must not claim any cgroup limit.
func TestProbeUnprivilegedIsHonest(t *testing.T) {
	limitstest.RequireRoot(t) // to switch to uid 65534
	dir, err := os.MkdirTemp("", "limits-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// The test binary's own directory is private to root.
	bin := filepath.Join(dir, "limits.test")
	if err := copyFile(bin, "/proc/self/exe"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(bin, "-test.run=^$")
	c.Env = append(os.Environ(), helperEnv+"=probe-json", argEnv+"="+limitstest.UniqueName(t), gateEnv+"=0")
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	c.Stderr = os.Stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("unprivileged probe: %v", err)
	}
	var caps limits.Capabilities
	if err := json.Unmarshal(out, &caps); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	t.Logf("unprivileged: %s", out)
	if caps.CgroupCreate || caps.MemoryLimit || caps.OOMDetection || caps.PidsLimit || caps.CPUQuota || caps.TreeKill || caps.CgroupFD {
		t.Fatalf("unprivileged probe claims cgroup limits: %+v", caps)
	}
	if caps.Reasons[limits.ReasonCgroups] == "" || caps.Reasons[limits.ReasonMemory] == "" {
		t.Fatalf("no reasons: %+v", caps.Reasons)
	}
	if caps.Namespaces {
		t.Errorf("namespaces without userns claimed for an unprivileged user")
	}
	if err := caps.Check(limits.Spec{}, false); err != nil {
		t.Errorf("no-limit job refused: %v", err)
	}
	if err := caps.Check(limits.Spec{MemoryBytes: 1 << 20}, false); !errors.Is(err, limits.ErrUnsupportedLimit) {
		t.Errorf("memory accepted: %v", err)
	}
}

func copyFile(dst, src string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// TestUpdateBindsALimitLater: a group created without a memory limit and
// given one by Update enforces it (a pre-started worker bound to an
// attempt), and an Update of a deleted group fails.
func TestUpdateBindsALimitLater(t *testing.T) {
	m := newManager(t)
	c := m.Capabilities()
	limitstest.RequireIsolation(t, c.MemoryLimit && c.OOMDetection, "memory: %s %s", c.Reasons[limits.ReasonMemory], c.Reasons[limits.ReasonOOM])
	g := newGroup(t, m, "late", limits.Spec{})
	if err := g.Update(limits.Spec{MemoryBytes: 32 << 20}); err != nil {
		t.Fatal(err)
	}
	h := startHelper(t, g, "alloc", "256")
	if sig, ok := exitSignal(h.wait(t)); !ok || sig != syscall.SIGKILL {
		t.Fatal("helper allocating 256 MiB after Update to 32 MiB was not killed")
	}
	kill(t, g)
	if o, err := g.Result(); err != nil || !o.OOMKilled {
		t.Fatalf("not reported as OOM: %+v %v", o, err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if err := g.Update(limits.Spec{MemoryBytes: 64 << 20}); !errors.Is(err, limits.ErrDeleted) {
		t.Fatalf("update after delete: %v", err)
	}
}

// TestDirHandlesFollowGroups: the directory handles that control files
// are opened through (dirfd_linux.go) come and go with the groups, so a
// long-running supervisor holds no descriptor per finished attempt, and a
// group removed behind our back still fails cleanly.
func TestDirHandlesFollowGroups(t *testing.T) {
	m := newManager(t)
	base := limits.DirHandles()
	for i := range 20 {
		g, err := m.Create(fmt.Sprintf("h%d", i), limits.Spec{MemoryBytes: 64 << 20, Pids: 16})
		if err != nil {
			t.Fatal(err)
		}
		if got := limits.DirHandles(); got != base+len(g.Dirs()) {
			t.Fatalf("handles with one group of %d dirs: %d, want %d", len(g.Dirs()), got, base+len(g.Dirs()))
		}
		if err := g.Update(limits.Spec{MemoryBytes: 32 << 20, Pids: 16}); err != nil {
			t.Fatal(err)
		}
		if err := g.Delete(); err != nil {
			t.Fatal(err)
		}
	}
	if got := limits.DirHandles(); got != base {
		t.Errorf("handles after 20 groups came and went: %d, want %d", got, base)
	}
	g, err := m.Create("gone", limits.Spec{Pids: 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range g.Dirs() {
		if err := os.Remove(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Update(limits.Spec{Pids: 8}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("update of a group removed behind our back: %v, want ENOENT", err)
	}
	if err := g.Delete(); err != nil {
		t.Errorf("delete of a group removed behind our back: %v", err)
	}
	if got := limits.DirHandles(); got != base {
		t.Errorf("handles after the removed group's Delete: %d, want %d", got, base)
	}
}
