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

// sideBySide starts the sides a benchmark measures in turn in one run:
// this build's supervisor and, when supervisorBaselineEnv names another
// build, that one too under a cgroup of its own (removed at the end).
func sideBySide[S any](b *testing.B, start func(prefix, bin, group string) S) []S {
	b.Helper()
	sides := []S{start("", supervisorBin, cgroupName)}
	if old := os.Getenv(supervisorBaselineEnv); old != "" {
		group := cgroupName + "-old"
		sides = append(sides, start("old-", old, group))
		b.Cleanup(func() {
			for _, g := range slices.Backward(cgroupsNamed(group)) {
				os.Remove(g)
			}
		})
	}
	return sides
}

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
	sides := sideBySide(b, start)
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

// BenchmarkHostileDigestJobs runs the digest attacks of issue #26 as
// verify jobs through daemons whose worker lies that it verified them,
// at GOMAXPROCS 1, 2 and 16 (sub-benchmarks), so that the supervisor's
// own verification is what runs, and measures from outside the daemon,
// per attack and job: the growth of its peak resident set
// (<attack>-peak-growth-MiB, the largest: a daemon that kept the heap an
// earlier job grew shows less growth on the next), its CPU for the job
// (<attack>-daemon-cpu-ms, every thread's schedstat) and the time from
// produced to the end (<attack>-verify-ms), medians. HOSTILE_DIGEST_SIZE=issue runs the
// issue's sizes (the 23 KB artifact of 2^24 axis-0 steps in a job of 64
// MiB; 32,768 hashes sharing a list of 524,288 pairs in a job of 256
// MiB); otherwise those of TestSupervisorVerifiesDigestAttacksWithinTheJob.
// With CYBER_SUPERVISOR_BASELINE set, a daemon of that binary runs the
// same jobs alternately and its figures are the old-* metrics.
func BenchmarkHostileDigestJobs(b *testing.B) {
	requireIsolation(b)
	attacks := digestAttacks(22, 16, 12, 48<<20)
	if os.Getenv("HOSTILE_DIGEST_SIZE") == "issue" {
		attacks = digestAttacks(hostile.AxisZeroDoublings, hostile.SharedListDoublings, hostile.SharedHashDoublings, 256<<20)
	}
	for _, procs := range []int{1, 2, 16} {
		b.Run(fmt.Sprintf("gomaxprocs=%d", procs), func(b *testing.B) {
			env := []string{fmt.Sprintf("GOMAXPROCS=%d", procs)}
			type side struct {
				prefix              string
				d                   *daemon
				growth, cpu, verify map[string][]float64
			}
			start := func(prefix, bin, group string) *side {
				home := filepath.Join(b.TempDir(), "home")
				if err := os.MkdirAll(home, 0o700); err != nil {
					b.Fatal(err)
				}
				d := startDaemonEnv(b, bin, home, 1, lyingBin, env, "--log-level", "warn", "--cgroup-name", group)
				b.Cleanup(func() { d.stop(b) })
				return &side{prefix: prefix, d: d, growth: map[string][]float64{}, cpu: map[string][]float64{}, verify: map[string][]float64{}}
			}
			sides := sideBySide(b, start)
			b.ResetTimer()
			for i := range b.N {
				for _, a := range attacks {
					for _, s := range sides {
						id := fmt.Sprintf("%s%s-%d", s.prefix, a.id, i)
						pid := s.d.cmd.Process.Pid
						before := procMemory(b, pid, "VmRSS")
						resetPeak(b, pid)
						cpu := procCPU(b, pid)
						if _, err := s.d.client.Submit(context.Background(), a.spec(b, id), 0, nil); err != nil {
							b.Fatal(err)
						}
						st := waitDone(b, s.d, id)
						cpu = procCPU(b, pid) - cpu
						peak := procMemory(b, pid, "VmHWM")
						if a.want == "" && st.Job.State != "accepted" || a.want != "" && (st.Job.Error == nil || st.Job.Error.Code != a.want) {
							b.Fatalf("%s: %s %+v", id, st.Job.State, st.Job.Error)
						}
						s.growth[a.id] = append(s.growth[a.id], mib(peak-before))
						s.cpu[a.id] = append(s.cpu[a.id], float64(cpu)/1e6)
						s.verify[a.id] = append(s.verify[a.id], float64(verificationTime(b, s.d, id))/float64(time.Millisecond))
					}
				}
			}
			b.StopTimer()
			for _, s := range sides {
				for _, a := range attacks {
					b.ReportMetric(slices.Max(s.growth[a.id]), s.prefix+a.id+"-peak-growth-MiB")
					b.ReportMetric(loadbench.Median(s.cpu[a.id]), s.prefix+a.id+"-daemon-cpu-ms")
					b.ReportMetric(loadbench.Median(s.verify[a.id]), s.prefix+a.id+"-verify-ms")
				}
			}
		})
	}
}
