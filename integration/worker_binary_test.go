package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A dynamically linked worker cannot run in the jail, which holds that
// one file and not the loader it names. Before, the run recorded the job
// and its exec failed inside the jail with nothing but "execve
// /bin/worker: No such file or directory" (internal_error, retryable);
// now the launcher refuses it up front as a usage error saying what to
// build.
func TestDynamicWorkerIsRefused(t *testing.T) {
	requireIsolation(t)
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		if os.Getenv("REQUIRE_ISOLATION") == "1" {
			t.Fatal("REQUIRE_ISOLATION=1 but no gcc to build a dynamically linked binary")
		}
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "dyn.c")
	if err := os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dyn := filepath.Join(dir, "nox-worker")
	if out, err := exec.Command(gcc, "-o", dyn, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if err := os.Chmod(dyn, 0o755); err != nil {
		t.Fatal(err)
	}
	home := newHome(t)
	prog := writeProgram(t, t.TempDir(), "add.nox", "[5 [[0 2] [0 6]]]")
	args := []string{"--home", home, "run", "--worker", dyn, "--isolation", "required", "--cgroup-name", cgroupName, prog, "--input-values", "3,5"}
	r := cli(t, args...)
	if r.code != 2 || !strings.Contains(r.stderr, "dynamically linked") || !strings.Contains(r.stderr, "CGO_ENABLED=0") {
		t.Fatalf("a dynamically linked worker: %+v", r)
	}
	env := cliJSON(t, 2, args...)
	if env.Error == nil || env.Error.Code != "usage" || env.Error.Retryable {
		t.Fatalf("a dynamically linked worker: %+v", env.Error)
	}
}

// A worker with no sandbox-gate beside it: the gate is the one init that
// places and jails a worker (docs/sandbox.md), so a launcher that would
// place workers in cgroups refuses to start, as a usage error saying what
// to build. Before, the worker binary played its own init (slower, and a
// second init to keep).
func TestWorkerWithoutGateIsRefused(t *testing.T) {
	requireIsolation(t)
	dir := t.TempDir()
	for p := dir; p != "/" && p != "/tmp"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755) // the workers' uids must reach the binary
	}
	alone := filepath.Join(dir, "nox-worker")
	copyFile(t, workerBin, alone)
	home := newHome(t)
	prog := writeProgram(t, t.TempDir(), "add.nox", "[5 [[0 2] [0 6]]]")
	for _, isolation := range []string{"required", "off"} {
		args := []string{"--home", home, "run", "--worker", alone, "--isolation", isolation, "--cgroup-name", cgroupName, prog, "--input-values", "3,5"}
		r := cli(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "no sandbox-gate beside") {
			t.Fatalf("--isolation %s, a worker without a gate: %+v", isolation, r)
		}
	}
}
