package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
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
func requireIsolation(t testing.TB) { t.Helper(); testenv.RequireRoot(t) }

// leftovers names the test's worker processes still alive and the
// attempt cgroups left below the parent group cgroupName.
func leftovers(cgroupName string) []string { return testenv.WorkerLeftovers(workerBin, cgroupName) }

// checkNoLeftovers: once a test's launchers are closed, no worker
// process and no cgroup below the test's parent group may remain.
func checkNoLeftovers(t testing.TB, cgroupName string) {
	t.Helper()
	if left := testenv.WaitNoLeftovers(func() []string { return leftovers(cgroupName) }, 20*time.Millisecond); left != nil {
		t.Errorf("left behind: %v", left)
	}
}

// removeParentGroups removes the (empty) parent groups a test's
// launcher leaves, which every boot of a home shares.
func removeParentGroups(name string) { testenv.RemoveParentGroups(name) }

func allCaps() protocol.Capabilities {
	return protocol.Capabilities{Backend: "nox-worker", BackendVersion: "0", Contracts: []string{protocol.ContractV1}, VM: "nox",
		ProofKinds: []string{protocol.ProfilePublicTrace, protocol.ProfileNone},
		Operations: []protocol.Operation{protocol.OpExecute, protocol.OpProve, protocol.OpVerify},
		Limits:     protocol.EnforcedLimits{Reductions: true, WallTime: true, Memory: true, ArtifactBytes: true, Cancellation: true, Pids: true}}
}
