package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
)

// TestBenchProveScript runs scripts/bench-prove.sh at the smoke size on
// one program with this binary as base (proving v1) and head (v2), and
// checks its table:
// a row per binary, the corpus's reductions, numbers in every column
// (a failed prove or verify prints FAIL:code or "-" instead).
func TestBenchProveScript(t *testing.T) {
	if _, err := exec.LookPath("/usr/bin/time"); err != nil {
		t.Skip("GNU time is not installed")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	bin := filepath.Join(t.TempDir(), "nox-worker")
	if err := testbin.BuildPure(root, "./cmd/nox-worker", bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "bench-prove.sh"),
		"--sizes", "1e5", "--programs", "spin", "--head", bin, "--base", bin, "--profile", "v2", "--base-profile", "v1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench-prove.sh: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 || lines[0] != "# head proves in v2, base in v1" {
		t.Fatalf("want the profiles, a header and two rows:\n%s", out)
	}
	lines = lines[1:]
	if len(lines) != 3 {
		t.Fatalf("want a header and two rows:\n%s", out)
	}
	for i, b := range []string{"base", "head"} {
		f := strings.Fields(lines[i+1])
		if len(f) != 15 || f[0] != b || f[1] != "spin" || f[2] != "1e5" || f[3] != "98290" {
			t.Fatalf("row %q", lines[i+1])
		}
		cols := f[4:]
		if _, err := exec.LookPath("zstd"); err != nil {
			cols = f[4:14] // raw bytes need the zstd command
		}
		for _, v := range cols {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				t.Fatalf("row %q: column %q is not a number", lines[i+1], v)
			}
		}
	}
}
