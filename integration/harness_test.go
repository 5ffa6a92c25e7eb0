// Package integration runs the real binaries: nox-worker built static,
// cyber-supervisor, real cgroups, real namespaces, real kills and crashes.
// Tests that need root and cgroups skip with a reason, unless
// REQUIRE_ISOLATION=1 (set by scripts/test.sh and CI), where a missing
// capability is a failure.
package integration

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
)

// cgroupName is this test process's parent group, so that parallel test
// binaries never see each other's groups.
var cgroupName = fmt.Sprintf("cyber-it-%d", os.Getpid())

var (
	binDir        string
	workerBin     string
	supervisorBin string
	// lyingBin is a worker that reports hostile artifacts as successes
	// (internal/lyingworker).
	lyingBin string
	repoRoot string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Dir(filepath.Dir(file))
	flag.Parse()
	if testing.Short() {
		// The developer's tier: every test here skips (skipShort), so
		// nothing is built.
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "cyber-it-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	workerBin = filepath.Join(dir, "nox-worker")
	supervisorBin = filepath.Join(dir, "cyber-supervisor")
	lyingBin = filepath.Join(dir, "lying-worker")
	for bin, pkg := range map[string]string{workerBin: "./cmd/nox-worker", supervisorBin: "./cmd/cyber-supervisor",
		filepath.Join(dir, "sandbox-gate"): "./cmd/sandbox-gate", lyingBin: "./internal/lyingworker"} {
		if err := testbin.Build(repoRoot, pkg, bin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	code := m.Run()
	for _, g := range cgroupsNamed(cgroupName) {
		os.Remove(g) // the empty parent groups of this run
	}
	return code
}

// requireIsolation skips (or, with REQUIRE_ISOLATION=1, fails) a test on a
// host where workers cannot be isolated with hard limits.
func requireIsolation(t testing.TB) limits.Capabilities {
	t.Helper()
	return requireIsolationOr(t, os.Getenv("REQUIRE_ISOLATION") == "1")
}

// requireIsolationOr is requireIsolation, failing where required is set
// (not through the environment: t.Setenv rules out t.Parallel).
func requireIsolationOr(t testing.TB, required bool) limits.Capabilities {
	t.Helper()
	skipShort(t)
	missing := func(why string) {
		if required {
			t.Fatalf("REQUIRE_ISOLATION=1 but %s", why)
		}
		t.Skipf("isolation unavailable: %s (set REQUIRE_ISOLATION=1 to make this a failure)", why)
	}
	if os.Geteuid() != 0 {
		missing("not root")
	}
	m, err := limits.NewManager(limits.Options{Name: "cyber-it-probe"})
	if err != nil {
		missing(err.Error())
	}
	defer m.Close(context.Background())
	c := m.Capabilities()
	if !c.MemoryLimit || !c.TreeKill || !c.Namespaces || !c.OOMDetection {
		missing(fmt.Sprintf("memory %v, tree kill %v, namespaces %v, oom detection %v: %v",
			c.MemoryLimit, c.TreeKill, c.Namespaces, c.OOMDetection, c.Reasons))
	}
	return c
}

// skipShort skips every test of this package in the developer's tier
// (go test -short): they run the real binaries end to end, as root, with
// cgroups; the full tier (scripts/test.sh, CI) runs them.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: an end-to-end test of the built binaries")
	}
}

// newHome makes a supervisor home and registers the leak check for it.
func newHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkLeaks(t, home) })
	return home
}

// checkLeaks fails the test if anything of its workers is left: a
// process running the worker binary, a cgroup of the supervisor, a mount
// under the home, a socket file.
func checkLeaks(t testing.TB, home string) {
	t.Helper()
	for _, p := range testenv.WaitNoLeftovers(func() []string { return leaks(home) }, 50*time.Millisecond) {
		t.Errorf("leak: %s", p)
	}
}

func leaks(home string) []string {
	var out []string
	env := envOf(home)
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, p := range procs {
		exe, err := os.Readlink(p)
		if err != nil {
			continue
		}
		if strings.HasPrefix(exe, env.binDir+"/") && !strings.HasSuffix(exe, "cyber-supervisor") {
			if st, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat")); !isZombie(st) {
				out = append(out, "process "+p+" → "+exe)
			}
		}
	}
	// Every hierarchy: no group of this test run may remain below the
	// parent group (the parent itself is shared by all boots).
	for _, g := range cgroupsNamed(env.cgroup) {
		subs, _ := os.ReadDir(g)
		for _, e := range subs {
			if e.IsDir() {
				out = append(out, "cgroup "+filepath.Join(g, e.Name()))
			}
		}
	}
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.Contains(sc.Text(), home) {
				out = append(out, "mount "+sc.Text())
			}
		}
		f.Close()
	}
	socks, _ := filepath.Glob(filepath.Join(launch.WorkerSocketDir(home), "*", "*"))
	for _, s := range socks {
		out = append(out, "socket file "+s)
	}
	return out
}

func isZombie(stat []byte) bool {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// program builds a job program that applies the loop body F to [F n],
// where n is the job's single input: [2 [[3 [[1 F] [0 2]]] [1 F]]].
func program(t testing.TB, body string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "integration", "testdata", body))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.TrimSpace(string(b))
	return "[2 [[3 [[1 " + f + "] [0 2]]] [1 " + f + "]]]"
}

// writeProgram writes a .nox file for a job program.
func writeProgram(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// cgroupsNamed finds directories called name (at any depth up to 4)
// under every cgroup hierarchy, and everything below them.
func cgroupsNamed(name string) []string {
	var out []string
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, root := range roots {
		var walk func(dir string, depth int)
		walk = func(dir string, depth int) {
			ents, err := os.ReadDir(dir)
			if err != nil {
				return
			}
			for _, e := range ents {
				if !e.IsDir() {
					continue
				}
				p := filepath.Join(dir, e.Name())
				if e.Name() == name {
					out = append(out, p)
					continue
				}
				if depth < 4 {
					walk(p, depth+1)
				}
			}
		}
		walk(root, 0)
	}
	return out
}
