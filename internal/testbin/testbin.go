// Package testbin builds the project's commands for tests exactly as
// scripts/build.sh does: every binary static; the worker without cgo (its
// jail holds that one file and nothing it could load); sandbox-gate with
// cgo, so that its C init runs before any Go runtime starts, through
// scripts/build-gate.sh (musl when musl-gcc is installed).
package testbin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
)

// Build runs go build for pkg (e.g. "./cmd/nox-worker") in the module
// root and writes dst: a name of dst's own for the binary built once for
// all test processes (shared.go).
func Build(root, pkg, dst string) error {
	if path.Base(pkg) == "sandbox-gate" {
		return shared(root, pkg, dst, func(out string) error { return buildGate(root, out) }, "gate")
	}
	return BuildPure(root, pkg, dst)
}

// buildGate runs scripts/build-gate.sh, which picks the C library.
func buildGate(root, dst string) error {
	abs, err := filepath.Abs(dst)
	if err != nil {
		return err
	}
	cmd := exec.Command("bash", filepath.Join("scripts", "build-gate.sh"), abs)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build sandbox-gate: %w\n%s", err, out)
	}
	return nil
}

// BuildPure builds pkg without cgo.
func BuildPure(root, pkg, dst string) error { return build(root, pkg, dst, "0") }

// BuildTags builds pkg without cgo and with build tags (a comma-separated
// list; e.g. "crashpoints", the supervisor with its crash points).
func BuildTags(root, pkg, dst, tags string) error { return build(root, pkg, dst, "0", "-tags", tags) }

func build(root, pkg, dst, cgo string, flags ...string) error {
	return shared(root, pkg, dst, func(out string) error { return goBuild(root, pkg, out, cgo, flags...) }, settingsOf(cgo, flags)...)
}

func goBuild(root, pkg, dst, cgo string, flags ...string) error {
	// Stripped, as scripts/build.sh builds them: a supervisor with its
	// symbol table and DWARF took ~0.7 ms longer to start here, which the
	// one-shot benchmark measured although no user runs such a build.
	args := append([]string{"build", "-trimpath", "-ldflags=-s -w"}, flags...)
	cmd := exec.Command("go", append(args, "-o", dst, pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %w\n%s", pkg, err, out)
	}
	return nil
}

// Capture runs cmd with its stdout and stderr captured and returns them
// with the exit status; err is only a failure to run it (an exit status
// other than 0 is code, not err).
func Capture(cmd *exec.Cmd) (stdout, stderr string, code int, err error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code, err = ee.ExitCode(), nil
	}
	return out.String(), errb.String(), code, err
}

// BuildTestBinary builds the test binary of the package in dir (go test
// -c, without cgo: static, so that a jail that holds this one file can
// run it) and writes dst.
func BuildTestBinary(root, dir, dst string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	return shared(root, abs, dst, func(out string) error {
		cmd := exec.Command("go", "test", "-c", "-o", out, ".")
		cmd.Dir = abs
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go test -c %s (CGO_ENABLED=0): %w\n%s", dir, err, b)
		}
		return nil
	}, "test -c", "CGO_ENABLED=0")
}
