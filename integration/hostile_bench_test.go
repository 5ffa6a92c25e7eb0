package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// supervisorBaselineEnv names another build's cyber-supervisor for
// BenchmarkHostileVerifyJob to run side by side with this one
// (scripts/bench-hostile.sh builds it from an older revision).
const supervisorBaselineEnv = "CYBER_SUPERVISOR_BASELINE"

// procCPU is the CPU time of every thread of process pid so far, in
// nanoseconds (/proc/PID/task/*/schedstat: the scheduler's own account).
func procCPU(t testing.TB, pid int) int64 {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no threads of %d: %v", pid, err)
	}
	var sum int64
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that ended
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			sum += ns
		}
	}
	return sum
}

// BenchmarkHostileVerifyJob is a supervisor verify job of the 1.1 KB
// nested-result artifact of issue #16 (its statement claiming the whole
// budget as calls, so that the first result is read), through a daemon
// whose worker lies that it verified it, so that the supervisor's own
// verification is what decides. Measured from outside the daemon: the
// growth of its peak resident set during the job (/proc/PID/status
// VmHWM, reset through clear_refs before each job), its CPU time for the
// whole job (every thread's schedstat), its resident set after all jobs
// (rss-after-MiB), and the time from the attempt's produced event to its
// rejection (the daemon's records), medians per job. With
// CYBER_SUPERVISOR_BASELINE set, a daemon of that binary runs the same
// jobs alternately and its figures are reported as old-*.
func BenchmarkHostileVerifyJob(b *testing.B) {
	requireIsolation(b)
	const budget = 1_000_000
	lim := protocol.Limits{Reductions: budget}
	artifact := hostile.Compress(hostile.NestedResultClaimingBudget(hostile.NestedPairs, budget))
	type side struct {
		prefix                      string
		d                           *daemon
		growth, cpu, verify, before []float64
	}
	start := func(prefix, bin, group string) *side {
		home := filepath.Join(b.TempDir(), "home")
		if err := os.MkdirAll(home, 0o700); err != nil {
			b.Fatal(err)
		}
		d := startDaemonBin(b, bin, home, 1, lyingBin, "--log-level", "warn", "--cgroup-name", group)
		b.Cleanup(func() { d.stop(b) })
		warm := jobSpec(b, prefix+"warm", protocol.OpExecute, hostile.QuoteProgram, nil, lim)
		if _, err := d.client.Submit(context.Background(), warm, 0, nil); err != nil {
			b.Fatal(err)
		}
		if st := waitDone(b, d, prefix+"warm"); st.Job.State != "accepted" {
			b.Fatalf("%swarm-up: %s %+v", prefix, st.Job.State, st.Job.Error)
		}
		return &side{prefix: prefix, d: d}
	}
	sides := []*side{start("", supervisorBin, cgroupName)}
	if old := os.Getenv(supervisorBaselineEnv); old != "" {
		group := cgroupName + "-old"
		sides = append(sides, start("old-", old, group))
		b.Cleanup(func() {
			for _, g := range slices.Backward(cgroupsNamed(group)) {
				os.Remove(g)
			}
		})
	}
	b.ResetTimer()
	for i := range b.N {
		for _, s := range sides {
			id := fmt.Sprintf("%sattack-%d", strings.TrimSuffix(s.prefix, "-"), i)
			spec := jobSpecWith(b, id, protocol.OpVerify, hostile.QuoteProgram, nil, lim, func(js *protocol.JobSpec) { js.Artifact = artifact })
			pid := s.d.cmd.Process.Pid
			before := procMemory(b, pid, "VmRSS")
			resetPeak(b, pid)
			cpu := procCPU(b, pid)
			if _, err := s.d.client.Submit(context.Background(), spec, 0, nil); err != nil {
				b.Fatal(err)
			}
			st := waitDone(b, s.d, id)
			cpu = procCPU(b, pid) - cpu
			peak := procMemory(b, pid, "VmHWM")
			if st.Job.State != "rejected" || st.Job.Error == nil || st.Job.Error.Code != protocol.CodeProofRejected {
				b.Fatalf("%s: %s %+v", id, st.Job.State, st.Job.Error)
			}
			s.growth = append(s.growth, mib(peak-before))
			s.cpu = append(s.cpu, float64(cpu)/1e6)
			s.verify = append(s.verify, float64(verificationTime(b, s.d, id))/float64(time.Millisecond))
			s.before = append(s.before, mib(before))
		}
	}
	b.StopTimer()
	for _, s := range sides {
		b.ReportMetric(loadbench.Median(s.growth), s.prefix+"peak-growth-MiB")
		b.ReportMetric(loadbench.Median(s.cpu), s.prefix+"daemon-cpu-ms")
		b.ReportMetric(loadbench.Median(s.verify), s.prefix+"produced-to-rejected-ms")
		b.ReportMetric(mib(procMemory(b, s.d.cmd.Process.Pid, "VmRSS")), s.prefix+"rss-after-MiB")
	}
}
