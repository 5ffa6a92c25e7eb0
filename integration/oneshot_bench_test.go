package integration

import (
	"bytes"
	"fmt"
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
// their ratio (the target: at most 2).
//
// bwrap is Debian's bubblewrap; .ci/run installs it. Without it the
// benchmark skips, unless REQUIRE_BWRAP=1 (scripts/bench.sh sets it).
func BenchmarkOneShotVersusBubblewrap(b *testing.B) {
	requireIsolation(b)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		if os.Getenv("REQUIRE_BWRAP") == "1" {
			b.Fatal("REQUIRE_BWRAP=1 but bwrap is not installed (Debian: apt-get install bubblewrap)")
		}
		b.Skip("bwrap is not installed (Debian: apt-get install bubblewrap); set REQUIRE_BWRAP=1 to make this a failure")
	}
	dir := b.TempDir()
	prog := writeProgram(b, dir, "add.nox", "[5 [[0 2] [0 6]]]")
	home := filepath.Join(dir, "home")
	ours := []string{supervisorBin, "--home", home, "run", prog, "--op", "execute", "--isolation", "required",
		"--input-values", "3,5", "--worker", workerBin, "--cgroup-name", cgroupName}
	theirs := []string{bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", workerBin, "/nox-worker",
		"--ro-bind", prog, "/add.nox", "--proc", "/proc", "--dev", "/dev", "/nox-worker", "run", "/add.nox", "--input-values", "3,5"}
	once := func(args []string) time.Duration {
		var out, errb bytes.Buffer
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		if err != nil || strings.TrimSpace(out.String()) != "8" {
			b.Fatalf("%s: %v, stdout %q\n%s", filepath.Base(args[0]), err, out.String(), errb.String())
		}
		return d
	}
	// The first run of the home probes the host and describes the worker
	// (the host cache); every later one, like every later run of a user,
	// finds them cached.
	once(ours)
	once(theirs)
	b.ResetTimer()
	var ourTimes, theirTimes []time.Duration
	for range b.N {
		theirTimes = append(theirTimes, once(theirs))
		ourTimes = append(ourTimes, once(ours))
	}
	b.StopTimer()
	ourMedian, theirMedian := loadbench.Percentile(ourTimes, 0.5), loadbench.Percentile(theirTimes, 0.5)
	b.ReportMetric(loadbench.Millis(ourMedian), "run-p50-ms")
	b.ReportMetric(loadbench.Millis(theirMedian), "bwrap-p50-ms")
	b.ReportMetric(float64(ourMedian)/float64(theirMedian), "ratio")
	b.Log(fmt.Sprintf("cyber-supervisor run p50 %s, bwrap p50 %s, ratio %.2f over %d pairs", ourMedian, theirMedian, float64(ourMedian)/float64(theirMedian), b.N))
	checkLeaks(b, home)
}
