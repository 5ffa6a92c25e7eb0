package sandbox

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/sandbox/internal/testplugin"
)

const envCapProbe = "CYBER_SANDBOX_TEST_CAPPROBE"

func TestMain(m *testing.M) {
	// The test binary is also the worker that the gate execs.
	testplugin.MaybeServe()
	if os.Getenv(envCapProbe) == "1" {
		os.Exit(0)
	}
	if os.Getenv(envReaperHelper) == "1" {
		os.Exit(reaperHelper())
	}
	if os.Getenv(envUnprivHelper) == "1" {
		os.Exit(unprivHelper())
	}
	code := m.Run()
	if workerBin.dir != "" {
		os.RemoveAll(workerBin.dir)
	}
	os.Exit(code)
}

// skipOrFail is the one place a missing capability is handled: a skip with
// the reason, or a failure when REQUIRE_ISOLATION=1 (CI as root).
func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if os.Getenv("REQUIRE_ISOLATION") == "1" {
		t.Fatalf("REQUIRE_ISOLATION=1 and %s", reason)
	}
	t.Skipf("skipping: %s (REQUIRE_ISOLATION=1 turns this into a failure)", reason)
}

// workerBin is a statically linked copy of this test binary in a directory
// every uid can traverse. The jail shows the worker binary alone, so a
// dynamically linked binary (any -race build) cannot run inside; then the
// test package is rebuilt with CGO_ENABLED=0.
var workerBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func testWorker(t testing.TB) string {
	t.Helper()
	workerBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "sbx-worker-")
		if err != nil {
			workerBin.err = err
			return
		}
		workerBin.dir = dir
		if err := os.Chmod(dir, 0o755); err != nil {
			workerBin.err = err
			return
		}
		dst := filepath.Join(dir, "sandbox.test")
		self, err := os.Executable()
		if err != nil {
			workerBin.err = err
			return
		}
		if isStatic(self) {
			workerBin.err = copyFile(self, dst)
		} else {
			workerBin.err = buildStaticTestBinary(dst)
		}
		workerBin.path = dst
	})
	if workerBin.err != nil {
		t.Fatalf("preparing the static worker binary: %v", workerBin.err)
	}
	return workerBin.path
}

// gateBin is cmd/sandbox-gate built next to the worker binary, with cgo
// (the C init), as scripts/build.sh builds it.
var gateBin struct {
	once sync.Once
	path string
	err  error
}

// testGate is the gate, the C init.
func testGate(t testing.TB) string {
	t.Helper()
	dir := filepath.Dir(testWorker(t))
	gateBin.once.Do(func() {
		gateBin.path = filepath.Join(dir, "sandbox-gate")
		gateBin.err = testbin.Build("..", "./cmd/sandbox-gate", gateBin.path)
	})
	if gateBin.err != nil {
		t.Fatal(gateBin.err)
	}
	return gateBin.path
}

// forEachInit runs fn with use applying the gate to a config. There is one
// init now, the C gate's (docs/sandbox.md, "One way to start a jailed
// worker"); the tests keep their shape.
func forEachInit(t *testing.T, fn func(t *testing.T, use func(*Config))) {
	fn(t, func(c *Config) { c.GatePath = testGate(t) })
}

func isStatic(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

func buildStaticTestBinary(dst string) error {
	return testbin.BuildTestBinary("..", ".", dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

var capProbe struct {
	once sync.Once
	err  error
}

// requireIsolation checks once that namespaces can be created here by
// starting the worker binary in all of them.
func requireIsolation(t testing.TB) {
	t.Helper()
	w := testWorker(t)
	capProbe.once.Do(func() {
		flags := uintptr(unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWNET)
		attr := &syscall.SysProcAttr{Cloneflags: flags}
		if os.Geteuid() != 0 {
			attr.Cloneflags |= unix.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		}
		cmd := exec.Command(w)
		cmd.Env = []string{envCapProbe + "=1"}
		cmd.SysProcAttr = attr
		if out, err := cmd.CombinedOutput(); err != nil {
			capProbe.err = fmt.Errorf("cannot create pid/mnt/ipc/uts/net namespaces: %v %s", err, out)
		}
	})
	if capProbe.err != nil {
		skipOrFail(t, "%v", capProbe.err)
	}
}

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root (euid %d)", os.Geteuid())
	}
}

// fixture holds one test's host directories.
type fixture struct {
	t       testing.TB
	worker  string
	work    string
	sockets string
	jail    string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	requireIsolation(t)
	f := &fixture{t: t, worker: testWorker(t)}
	f.work = mkdirTemp(t, "sbx-work-")
	// Socket paths are limited to 107 bytes: keep this one short.
	f.sockets = mkdirTemp(t, "sbx-s-")
	f.jail = mkdirTemp(t, "sbx-root-")
	checkLeaks(t, f.sockets, f.jail)
	return f
}

func mkdirTemp(t testing.TB, prefix string) string {
	t.Helper()
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// testPluginSyscalls are what the test binary, as a worker, needs beyond
// nox-worker's allowlist (found with scripts/seccomp-trace.sh ./sandbox/):
// go-plugin's net/rpc server redirects stdout and stderr through pipes
// (pipe2, dup3), and the probes read their identity and environment
// (getuid, uname, getcwd, getrlimit, readlinkat, getdents64, pread64,
// ioctl), connect to a unix socket, and spawn and reap a grandchild
// (setsid, wait4, waitid, pidfd_open, pidfd_send_signal). The probes'
// intentional escapes (mount, unshare, setuid, IP sockets) are not here.
var testPluginSyscalls = []string{"pipe2", "dup3", "getuid", "uname", "getcwd", "getrlimit", "readlinkat",
	"getdents64", "pread64", "ioctl", "connect", "setsid", "wait4", "waitid", "pidfd_open", "pidfd_send_signal"}

func (f *fixture) isolated() Config {
	return Config{
		Mode:         ModeIsolated,
		WorkerPath:   f.worker,
		GatePath:     testGate(f.t),
		WorkDir:      f.work,
		SocketDir:    f.sockets,
		JailRoot:     f.jail,
		Landlock:     LandlockBestEffort,
		Seccomp:      true,
		SeccompAllow: testPluginSyscalls,
		Rlimits:      Rlimits{NoFile: 256, FSize: 64 << 20},
		StartTimeout: 5 * time.Second,
	}
}

func (f *fixture) unisolated() Config {
	return Config{
		Mode:         ModeUnisolated,
		WorkerPath:   f.worker,
		SocketDir:    f.sockets,
		StartTimeout: 5 * time.Second,
	}
}

// launched is one running test plugin.
type launched struct {
	sb     *Sandbox
	client *plugin.Client
	prober testplugin.Prober
}

// start launches the test plugin; on failure it returns the error from
// go-plugin with everything already torn down.
func start(t testing.TB, cfg Config) (*launched, error) {
	t.Helper()
	sb, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return startSandbox(t, sb)
}

func newPluginClient(cc *plugin.ClientConfig) *plugin.Client { return plugin.NewClient(cc) }

func pluginBase() *plugin.ClientConfig {
	return &plugin.ClientConfig{
		HandshakeConfig: testplugin.Handshake,
		Plugins:         testplugin.PluginMap,
		Logger:          hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off}),
	}
}

// startSandbox drives an already-created Sandbox through go-plugin.
func startSandbox(t testing.TB, sb *Sandbox) (*launched, error) {
	t.Helper()
	cc, err := sb.ClientConfig(pluginBase())
	if err != nil {
		return nil, err
	}
	l := &launched{sb: sb, client: newPluginClient(cc)}
	t.Cleanup(l.stop)
	rpc, err := l.client.Client()
	if err != nil {
		l.stop()
		return nil, err
	}
	raw, err := rpc.Dispense(testplugin.PluginName)
	if err != nil {
		l.stop()
		return nil, err
	}
	l.prober = raw.(testplugin.Prober)
	return l, nil
}

func mustStart(t testing.TB, cfg Config) *launched {
	t.Helper()
	l, err := start(t, cfg)
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	return l
}

// stop is the supervisor's kill path: our fast kill, then go-plugin's Kill,
// which then finds the process gone instead of waiting 2 s.
func (l *launched) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.sb.Kill(ctx)
	l.client.Kill()
}

// checkLeaks registers a cleanup that fails the test if, after it, there is
// a child process, a mount, or an entry in one of dirs that was not there
// before it.
func checkLeaks(t testing.TB, dirs ...string) {
	t.Helper()
	kids0 := pidSet(childPids())
	mounts0 := mountinfo(t)
	t.Cleanup(func() {
		var problems []string
		deadline := time.Now().Add(3 * time.Second)
		for {
			problems = problems[:0]
			for _, pid := range childPids() {
				if !kids0[pid] {
					problems = append(problems, fmt.Sprintf("child process %d (%s) left behind", pid, procComm(pid)))
				}
			}
			if added, removed := diffLines(mounts0, mountinfo(t)); len(added)+len(removed) > 0 {
				problems = append(problems, fmt.Sprintf("mount table changed: +%q -%q", added, removed))
			}
			for _, d := range dirs {
				if ents, err := os.ReadDir(d); err == nil && len(ents) > 0 {
					var names []string
					for _, e := range ents {
						names = append(names, e.Name())
					}
					problems = append(problems, fmt.Sprintf("%s not empty: %v", d, names))
				}
			}
			if len(problems) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, p := range problems {
			t.Errorf("leak: %s", p)
		}
	})
}

func pidSet(pids []int) map[int]bool {
	m := map[int]bool{}
	for _, p := range pids {
		m[p] = true
	}
	return m
}

func procComm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
}

// execedComm is procComm of a child that exec.Cmd.Start has just returned:
// Start returns when the close-on-exec pipe closes, which happens inside
// execve before the kernel has laid out the new image's arguments, and
// until then /proc/PID/cmdline reads empty. It waits (up to 5 s) for the
// exec to settle; an empty answer after that is a process that died.
func execedComm(pid int) string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		args := procComm(pid)
		if args != "" || time.Now().After(deadline) {
			return args
		}
		time.Sleep(time.Millisecond)
	}
}

// mountinfo returns the host's mount table without the per-mount ids, which
// the kernel reuses.
func mountinfo(t testing.TB) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatalf("read mountinfo: %v", err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) > 4 && !othersMount(f[4]) {
			out = append(out, strings.Join(f[3:], " "))
		}
	}
	sort.Strings(out)
	return out
}

// othersMount: a mount point that belongs to another test binary running
// at the same time (go test runs packages in parallel): one in the
// temporary directory that is not one of this package's fixture dirs
// (sbx-*; the supervisor's full-disk tests mount small tmpfs homes
// there), or a network namespace pinned under /run/netns (the
// integration package's cluster lab, `ip netns add`), where the sandbox
// never pins one.
func othersMount(point string) bool {
	if strings.HasPrefix(point, "/run/netns/") {
		return true
	}
	rel, ok := strings.CutPrefix(point, os.TempDir()+"/")
	return ok && !strings.HasPrefix(rel, "sbx-")
}

func diffLines(a, b []string) (added, removed []string) {
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		count[l]--
	}
	for l, n := range count {
		for ; n < 0; n++ {
			added = append(added, l)
		}
		for ; n > 0; n-- {
			removed = append(removed, l)
		}
	}
	return added, removed
}

// nsMembers lists host pids that share the PID namespace of pid.
func nsMembers(pid int) []int {
	target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ns, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && ns == target {
			out = append(out, p)
		}
	}
	return out
}

func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// cgroup2Root returns the cgroup2 mount to create test groups in.
func cgroup2Root(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return p
		}
	}
	skipOrFail(t, "no cgroup2 mount at /sys/fs/cgroup/unified or /sys/fs/cgroup")
	return ""
}

// testGroup is an in-test Placement: a cgroup2 leaf for CLONE_INTO_CGROUP,
// cgroup.kill as the kill hook, and a Place that records what it saw of
// the gated process.
type testGroup struct {
	dir string
	fd  int

	mu         sync.Mutex
	placedPid  int
	placedArgs string
}

func newTestGroup(t testing.TB) *testGroup {
	t.Helper()
	requireRoot(t)
	g, err := makeGroup(cgroup2Root(t))
	if err != nil {
		skipOrFail(t, "cannot create a cgroup2 group: %v", err)
	}
	t.Cleanup(func() {
		if err := g.remove(); err != nil {
			t.Error(err)
		}
	})
	return g
}

// makeGroup creates a fresh leaf. Groups are never reused after a kill:
// on this kernel (6.18) every CLONE_INTO_CGROUP into a group that has once
// been through cgroup.kill is SIGKILLed at fork (docs/sandbox.md).
func makeGroup(root string) (*testGroup, error) {
	dir, err := os.MkdirTemp(root, "sbx-test-")
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return &testGroup{dir: dir, fd: fd}, nil
}

func (g *testGroup) remove() error {
	unix.Close(g.fd)
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := os.Remove(g.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", g.dir, err)
		}
		_ = os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
		time.Sleep(10 * time.Millisecond)
	}
}

func (g *testGroup) CgroupFD() (int, bool) { return g.fd, true }

// Place records what the gated process runs. The init cannot pass its gate
// while Place runs (release writes its config only after Place returns),
// so waiting here for its exec to settle still sees the process as it was
// placed.
func (g *testGroup) Place(pid int) error {
	args := execedComm(pid)
	g.mu.Lock()
	g.placedPid, g.placedArgs = pid, args
	g.mu.Unlock()
	return nil
}

// kill is what limits' group kill does: cgroup.kill, then wait until the
// group is empty (signals are delivered asynchronously).
func (g *testGroup) kill(ctx context.Context) error {
	if err := os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return err
	}
	for g.populated() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

func (g *testGroup) populated() bool {
	b, _ := os.ReadFile(filepath.Join(g.dir, "cgroup.events"))
	return bytes.Contains(b, []byte("populated 1"))
}

func (g *testGroup) name() string { return "/" + filepath.Base(g.dir) }

// socketDir is go-plugin's socket directory of this worker on the host
// (an isolated worker's stays empty).
func (s *Sandbox) socketDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hostSocketDir
}

// idleCount is how many namespaces are idle.
func (p *netnsPool) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
