package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
)

// BenchmarkOneShotVersusBubblewrap: one isolated job from the command
// line, the way a user runs it, side by side with bubblewrap running the
// same nox-worker on the same job: `cyber-supervisor run add.nox --op
// execute --isolation required` (a fresh process each time: the home's
// store, the host cache, cgroups, the gated jail, go-plugin, the job's
// verification and acceptance, the teardown) against `bwrap --unshare-all
// ... nox-worker run add.nox` (namespaces and mounts, the worker's own
// run). The two alternate, b.N times each; it reports both medians and
// their ratio (a figure to compare builds by; the 2x target was retired
// in issue 29, docs/design/start-up-tricks.md).
//
// bwrap is Debian's bubblewrap; .ci/run installs it. Without it the
// benchmark skips, unless REQUIRE_BWRAP=1 (scripts/bench.sh sets it).
func BenchmarkOneShotVersusBubblewrap(b *testing.B) {
	bwrap := requireBwrap(b)
	dir := b.TempDir()
	prog := writeProgram(b, dir, "add.nox", addProgram)
	home := filepath.Join(dir, "home")
	ours := oneShotRun(home, prog)
	theirs := bwrapRun(bwrap, prog)
	// The first run of the home probes the host and describes the worker
	// (the host cache); every later one, like every later run of a user,
	// finds them cached.
	timeRun(b, ours, "8")
	timeRun(b, theirs, "8")
	b.ResetTimer()
	var ourTimes, theirTimes []time.Duration
	for range b.N {
		theirTimes = append(theirTimes, timeRun(b, theirs, "8"))
		ourTimes = append(ourTimes, timeRun(b, ours, "8"))
	}
	b.StopTimer()
	ourMedian, theirMedian := loadbench.Percentile(ourTimes, 0.5), loadbench.Percentile(theirTimes, 0.5)
	b.ReportMetric(loadbench.Millis(ourMedian), "run-p50-ms")
	b.ReportMetric(loadbench.Millis(theirMedian), "bwrap-p50-ms")
	b.ReportMetric(float64(ourMedian)/float64(theirMedian), "ratio")
	b.Logf("cyber-supervisor run p50 %s, bwrap p50 %s, ratio %.2f over %d pairs", ourMedian, theirMedian, float64(ourMedian)/float64(theirMedian), b.N)
	checkLeaks(b, home)
}

// addProgram adds the job's two inputs: 3 and 5 make 8.
const addProgram = "[5 [[0 2] [0 6]]]"

// requireBwrap finds bubblewrap, or skips (fails with REQUIRE_BWRAP=1).
func requireBwrap(b *testing.B) string {
	b.Helper()
	requireIsolation(b)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		if os.Getenv("REQUIRE_BWRAP") == "1" {
			b.Fatal("REQUIRE_BWRAP=1 but bwrap is not installed (Debian: apt-get install bubblewrap)")
		}
		b.Skip("bwrap is not installed (Debian: apt-get install bubblewrap); set REQUIRE_BWRAP=1 to make this a failure")
	}
	return bwrap
}

// oneShotRun is the command line a user runs: prog on 3 and 5.
func oneShotRun(home, prog string) []string {
	return []string{supervisorBin, "--home", home, "run", prog, "--op", "execute", "--isolation", "required",
		"--input-values", "3,5", "--worker", workerBin, "--cgroup-name", cgroupName}
}

// bwrapRun is bubblewrap running the same worker on the same job.
func bwrapRun(bwrap, prog string) []string {
	return []string{bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", workerBin, "/nox-worker",
		"--ro-bind", prog, "/add.nox", "--proc", "/proc", "--dev", "/dev", "/nox-worker", "run", "/add.nox", "--input-values", "3,5"}
}

// timeRun runs args once and returns its wall time; it fails b unless
// the command succeeds and prints want (nothing checked when want is "").
func timeRun(b *testing.B, args []string, want string) time.Duration {
	b.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil || strings.TrimSpace(out.String()) != want {
		b.Fatalf("%s: %v, stdout %q (want %q)\n%s", filepath.Base(args[0]), err, out.String(), want, errb.String())
	}
	return d
}
