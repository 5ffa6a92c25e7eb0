package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// A test that runs beside others (t.Parallel) takes its home from
// parallelHome. Its daemons run their workers from a bin dir of the
// test's own (hard links of the run's binaries) and place them under a
// parent cgroup of the test's own, so that its leak check sees only its
// own processes and groups, and no other test's check sees them. Tests
// on newHome share the run's bin dir and group: they run one at a time,
// and never beside a parallel one (go test starts the parallel tests
// once every sequential one has ended).

// homeEnv is where a home's workers come from and go.
type homeEnv struct {
	binDir string // nox-worker, sandbox-gate, lying-worker
	cgroup string // the daemons' --cgroup-name
}

// runEnv is the run's: the sequential tests'.
func runEnv() *homeEnv { return &homeEnv{binDir: binDir, cgroup: cgroupName} }

var homeEnvs sync.Map // home → *homeEnv of a parallel test

// envOf is home's env: its own for a parallel test's home, else the run's.
func envOf(home string) *homeEnv {
	if e, ok := homeEnvs.Load(home); ok {
		return e.(*homeEnv)
	}
	return runEnv()
}

// binFor is the test's own name for bin, one of the run's binaries.
func binFor(home, bin string) string {
	e := envOf(home)
	if filepath.Dir(bin) != binDir || e.binDir == binDir {
		return bin
	}
	return filepath.Join(e.binDir, filepath.Base(bin))
}

// parallelHome marks the test parallel and makes its home, its own bin
// dir and cgroup name, and registers the leak check of them.
func parallelHome(t *testing.T) string {
	t.Helper()
	t.Parallel()
	dir := t.TempDir()
	sum := sha256.Sum256([]byte(t.Name()))
	e := &homeEnv{binDir: filepath.Join(dir, "bin"), cgroup: cgroupName + "-" + hex.EncodeToString(sum[:4])}
	if err := os.Mkdir(e.binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nox-worker", "sandbox-gate", "lying-worker"} {
		if err := os.Link(filepath.Join(binDir, name), filepath.Join(e.binDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	homeEnvs.Store(home, e)
	t.Cleanup(func() {
		checkLeaks(t, home)
		for _, g := range cgroupsNamed(e.cgroup) {
			os.Remove(g) // the empty parent groups of the test's daemons
		}
	})
	return home
}
