package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

var workerBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "launch-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	workerBin = filepath.Join(dir, "nox-worker")
	for bin, pkg := range map[string]string{workerBin: "./cmd/nox-worker", filepath.Join(dir, "sandbox-gate"): "./cmd/sandbox-gate"} {
		if err := testbin.Build(root, pkg, bin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// requireIsolation skips, or with REQUIRE_ISOLATION=1 fails, where the
// host cannot isolate workers.
func requireIsolation(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("REQUIRE_ISOLATION") == "1" {
			t.Fatal("REQUIRE_ISOLATION=1 but not root")
		}
		t.Skip("isolation needs root (set REQUIRE_ISOLATION=1 to make this a failure)")
	}
}

// leftovers names the test's worker processes still alive and the
// attempt cgroups left below the parent group cgroupName.
func leftovers(cgroupName string) []string {
	var left []string
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, p := range procs {
		if exe, err := os.Readlink(p); err == nil && exe == workerBin {
			if st, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat")); !strings.Contains(string(st), ") Z ") {
				left = append(left, "process "+p)
			}
		}
	}
	groups, _ := filepath.Glob("/sys/fs/cgroup/*/" + cgroupName + "/*/*")
	more, _ := filepath.Glob("/sys/fs/cgroup/*/*/*/" + cgroupName + "/*/*")
	for _, g := range append(groups, more...) {
		if st, err := os.Stat(g); err == nil && st.IsDir() {
			left = append(left, "cgroup "+g)
		}
	}
	return left
}

// checkNoLeftovers: once a test's launchers are closed, no worker
// process and no cgroup below the test's parent group may remain.
func checkNoLeftovers(t testing.TB, cgroupName string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := leftovers(cgroupName)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("left behind: %v", left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// removeParentGroups removes the (empty) parent groups a test's
// launcher leaves, which every boot of a home shares.
func removeParentGroups(name string) {
	for _, pattern := range []string{"/sys/fs/cgroup/*/" + name, "/sys/fs/cgroup/*/*/*/" + name} {
		dirs, _ := filepath.Glob(pattern)
		for _, d := range dirs {
			os.Remove(d)
		}
	}
}

func allCaps() protocol.Capabilities {
	return protocol.Capabilities{Backend: "nox-worker", BackendVersion: "0", Contracts: []string{protocol.ContractV1}, VM: "nox",
		ProofKinds: []string{protocol.ProfilePublicTrace, protocol.ProfileNone},
		Operations: []protocol.Operation{protocol.OpExecute, protocol.OpProve, protocol.OpVerify},
		Limits:     protocol.EnforcedLimits{Reductions: true, WallTime: true, Memory: true, ArtifactBytes: true, Cancellation: true, Pids: true}}
}
