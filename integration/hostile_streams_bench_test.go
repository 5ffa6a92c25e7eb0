package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// silentRunTimeEnv sets BenchmarkHostileStreams' --time for the silent
// worker's run (default 2s; issue #26 measured 10s).
const silentRunTimeEnv = "BENCH_SILENT_TIME"

// BenchmarkHostileStreams measures, from outside the processes, what
// the attacks of TestSupervisorSurvivesHostileStreams and
// TestRunEndsASilentWorkerAtItsLimit cost a daemon of this build and,
// with CYBER_SUPERVISOR_BASELINE set, one of that build, run alternately
// (old-* metrics; scripts/bench-streams.sh): for each stream attack, the
// growth of a fresh daemon's resident set over its one job, at its peak
// (VmHWM, reset before the job) and after it, and the job's time; and the
// wall time of a one-shot run, on a fresh home, whose worker never
// answers. Medians per iteration.
func BenchmarkHostileStreams(b *testing.B) {
	requireIsolation(b)
	silentTime := 2 * time.Second
	if v := os.Getenv(silentRunTimeEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("%s: %v", silentRunTimeEnv, err)
		}
		silentTime = d
	}
	type side struct {
		prefix, bin, group string
		metrics            map[string][]float64
	}
	sides := sideBySide(b, func(prefix, bin, group string) *side {
		return &side{prefix: prefix, bin: bin, group: group}
	})
	for _, s := range sides {
		s.metrics = map[string][]float64{}
	}
	workers := map[string]string{}
	for _, a := range []string{"stdio-huge", "broker-flood", "silent"} {
		workers[a] = hostileWorker(b, a)
	}
	b.ResetTimer()
	for range b.N {
		for _, s := range sides {
			for _, attack := range []string{"stdio-huge", "broker-flood"} {
				peak, after, took := streamAttackCost(b, s.bin, s.group, workers[attack], attack)
				s.metrics[attack+"-peak-growth-MiB"] = append(s.metrics[attack+"-peak-growth-MiB"], mib(peak))
				s.metrics[attack+"-growth-after-MiB"] = append(s.metrics[attack+"-growth-after-MiB"], mib(after))
				s.metrics[attack+"-job-s"] = append(s.metrics[attack+"-job-s"], took.Seconds())
			}
			took := silentRunTime(b, s.bin, s.group, workers["silent"], silentTime)
			s.metrics["silent-run-s"] = append(s.metrics["silent-run-s"], took.Seconds())
		}
	}
	b.StopTimer()
	for _, s := range sides {
		for name, v := range s.metrics {
			b.ReportMetric(loadbench.Median(v), s.prefix+name)
		}
	}
}

// streamAttackCost runs one job of a daemon of bin whose worker is the
// stream attack, and returns the daemon's resident set growth at its
// peak and after the job, and the job's time from its submission.
func streamAttackCost(b *testing.B, bin, group, worker, attack string) (peak, after int64, took time.Duration) {
	home := filepath.Join(b.TempDir(), "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		b.Fatal(err)
	}
	d := startDaemonBin(b, bin, home, 1, worker, "--log-level", "warn", "--cgroup-name", group)
	defer d.stop(b)
	pid := d.cmd.Process.Pid
	before := procMemory(b, pid, "VmRSS")
	resetPeak(b, pid)
	start := time.Now()
	spec := jobSpec(b, attack, protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{3, 5}, protocol.Limits{})
	if _, err := d.client.Submit(context.Background(), spec, 0, nil); err != nil {
		b.Fatal(err)
	}
	st := waitDone(b, d, attack)
	took = time.Since(start)
	if st.Job.State != "accepted" {
		b.Fatalf("%s with %s: %s %+v", attack, bin, st.Job.State, st.Job.Error)
	}
	return procMemory(b, pid, "VmHWM") - before, procMemory(b, pid, "VmRSS") - before, took
}

// silentRunTime is the wall time of `run --time limit` of bin on a fresh
// home whose worker never answers; the run must fail.
func silentRunTime(b *testing.B, bin, group, worker string, limit time.Duration) time.Duration {
	home := filepath.Join(b.TempDir(), "home")
	prog := writeProgram(b, b.TempDir(), "add.nox", "[5 [[0 2] [0 6]]]")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	out, _, code, err := testbin.Capture(exec.CommandContext(ctx, bin, "--home", home, "run", "--worker", worker, "--isolation", "required",
		"--cgroup-name", group, prog, "--input-values", "3,5", "--time", limit.String(), "--format", "json"))
	took := time.Since(start)
	var env protocol.Envelope
	if err != nil || code == 0 || json.Unmarshal([]byte(out), &env) != nil || env.OK {
		b.Fatalf("run with a silent worker: exit %d, %q (%v)", code, out, err)
	}
	return took
}
