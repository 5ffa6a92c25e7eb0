package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
)

// BenchmarkOneShotFloor measures, side by side with the one-shot run and
// bubblewrap (as BenchmarkOneShotVersusBubblewrap does), what parts of a
// run cost by themselves, to say how close to bubblewrap any run through
// this architecture can come:
//   - floor: internal/launchfloor, the production launcher (cgroups,
//     gated jail, go-plugin) running the same job, with no store, no
//     verification, no command line (the least such a run takes);
//   - floor-start: the same binary started and ended, doing nothing;
//   - plugin-start: a binary linking only go-plugin, doing nothing;
//   - empty-start: an empty Go binary;
//   - worker: nox-worker running the job outside any jail (bubblewrap's
//     run is this plus its namespaces and mounts).
//
// Every command runs once per round, in the same order, b.N rounds; it
// reports each median and, for run and floor, the ratio to bubblewrap.
func BenchmarkOneShotFloor(b *testing.B) {
	bwrap := requireBwrap(b)
	dir := b.TempDir()
	floor := filepath.Join(dir, "launchfloor")
	pluginOnly := filepath.Join(dir, "pluginonly")
	empty := filepath.Join(dir, "empty")
	for bin, pkg := range map[string]string{floor: "./internal/launchfloor",
		pluginOnly: "./internal/launchfloor/pluginonly", empty: "./internal/launchfloor/empty"} {
		if err := testbin.BuildPure(repoRoot, pkg, bin); err != nil {
			b.Fatal(err)
		}
	}
	prog := writeProgram(b, dir, "add.nox", addProgram)
	home, floorHome := filepath.Join(dir, "home"), filepath.Join(dir, "floorhome")
	// The floor's launcher gets the same parent group as the run's: they
	// never run at once, and the leak check below covers both.
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bwrap", bwrapRun(bwrap, prog), "8"},
		{"run", oneShotRun(home, prog), "8"},
		{"floor", []string{floor, floorHome, workerBin, prog, cgroupName}, "8"},
		{"floor-start", []string{floor}, ""},
		{"plugin-start", []string{pluginOnly}, ""},
		{"empty-start", []string{empty}, ""},
		{"worker", []string{workerBin, "run", prog, "--input-values", "3,5"}, "8"},
	}
	// The first round fills both homes' host caches.
	for _, c := range cases {
		timeRun(b, c.args, c.want)
	}
	b.ResetTimer()
	times := make([][]time.Duration, len(cases))
	for range b.N {
		for i, c := range cases {
			times[i] = append(times[i], timeRun(b, c.args, c.want))
		}
	}
	b.StopTimer()
	medians := make([]time.Duration, len(cases))
	var table strings.Builder
	for i, c := range cases {
		medians[i] = loadbench.Percentile(times[i], 0.5)
		b.ReportMetric(loadbench.Millis(medians[i]), c.name+"-p50-ms")
		fmt.Fprintf(&table, "; %s %.2f ms (%.2f×)", c.name, loadbench.Millis(medians[i]), float64(medians[i])/float64(medians[0]))
	}
	b.ReportMetric(float64(medians[1])/float64(medians[0]), "run-ratio")
	b.ReportMetric(float64(medians[2])/float64(medians[0]), "floor-ratio")
	// One line: go test cuts a benchmark's log after ten.
	b.Logf("p50 over %d rounds, each against bwrap%s", b.N, table.String())
	checkLeaks(b, home)
	checkLeaks(b, floorHome)
}
