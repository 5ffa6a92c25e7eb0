package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestProveLongScript runs scripts/prove-long.sh at its smoke size (1e7:
// spin(19), 12,582,898 reductions) with this run's binaries and jailed
// workers, and checks its table: execute, prove and verify each ok with
// the run's reductions and a number in every column, then the
// certificate's sizes; the verify job named the certificate by
// reference (one file in the home's store). Before, there was no such
// script.
func TestProveLongScript(t *testing.T) {
	requireIsolation(t)
	work := t.TempDir()
	t.Cleanup(func() { checkLeaks(t, filepath.Join(work, "home")) })
	cmd := exec.Command(filepath.Join(repoRoot, "scripts", "prove-long.sh"), "--size", "1e7", "--isolation", "required",
		"--bin", binDir, "--cgroup-name", cgroupName, "--keep", work)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("prove-long.sh: %v\n%s", err, out)
	}
	t.Logf("\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "# spin(19)") || !strings.HasPrefix(lines[5], "# certificate: ") {
		t.Fatalf("want a title, a header, three phases and the sizes:\n%s", out)
	}
	// The verify job named the certificate by reference: stored once in
	// the home.
	if ents, err := os.ReadDir(filepath.Join(work, "home", "certificates")); err != nil || len(ents) != 1 {
		t.Fatalf("the home's certificate store holds %v (%v), want the one certificate", ents, err)
	}
	for i, phase := range []string{"execute", "prove", "verify"} {
		f := strings.Fields(lines[i+2])
		if len(f) != 8 || f[0] != phase || f[1] != "ok" || f[2] != "12582898" {
			t.Fatalf("row %q", lines[i+2])
		}
		for _, v := range f[3:] {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				t.Fatalf("row %q: column %q is not a number", lines[i+2], v)
			}
		}
	}
}
