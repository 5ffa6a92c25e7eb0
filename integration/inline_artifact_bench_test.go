package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
)

// BenchmarkInlineArtifactJob submits verify jobs whose hostile artifact
// travels inline in the spec (the frame of an honest statement followed
// by noise: inlineCases), of 5 and 32 MiB (sub-benchmarks), through the
// API of a daemon whose worker lies that it verified them, so that the
// supervisor's own verification decides, and measures from outside the
// daemon, per job: the growth of its peak resident set
// (peak-growth-MiB; the largest, max-growth-MiB, also per MiB of
// artifact, is the first job's: a daemon that kept the heap an earlier
// job grew shows less on the next), its CPU (daemon-cpu-ms, every
// thread's schedstat), the time the submission's request takes
// (submit-ms: the client's encoding, the transfer, admission and the
// store's write), the time from the worker's result to the job's end in
// the daemon's records (produced-to-end-ms: the supervisor's
// verification) and from the request to the job's end as the client
// sees it (submit-to-end-ms: the launch and the worker's run too),
// medians; and its resident set after the jobs (rss-after-MiB). With
// CYBER_SUPERVISOR_BASELINE set, a daemon of that binary runs the same
// jobs alternately and its figures are the old-* metrics
// (scripts/bench-inline.sh).
func BenchmarkInlineArtifactJob(b *testing.B) {
	requireIsolation(b)
	for _, size := range []int{5 << 20, 32 << 20} {
		b.Run(fmt.Sprintf("artifact=%dMiB", size>>20), func(b *testing.B) {
			c := inlineCases(size)[1]
			type side struct {
				prefix              string
				d                   *daemon
				growth, cpu, submit []float64
				verify, took        []float64
			}
			start := func(prefix, bin, group string) *side {
				home := filepath.Join(b.TempDir(), "home")
				if err := os.MkdirAll(home, 0o700); err != nil {
					b.Fatal(err)
				}
				d := startDaemonBin(b, bin, home, 1, lyingBin, "--log-level", "warn", "--cgroup-name", group)
				b.Cleanup(func() { d.stop(b) })
				warmInline(b, d, prefix)
				return &side{prefix: prefix, d: d}
			}
			sides := sideBySide(b, start)
			b.ResetTimer()
			for i := range b.N {
				for _, s := range sides {
					b.StopTimer()
					id := fmt.Sprintf("%sinline-%d", strings.TrimSuffix(s.prefix, "-"), i)
					spec := c.spec(b, id)
					pid := s.d.cmd.Process.Pid
					before := procMemory(b, pid, "VmRSS")
					resetPeak(b, pid)
					cpu := procCPU(b, pid)
					b.StartTimer()
					t0 := time.Now()
					if _, err := s.d.client.Submit(context.Background(), spec, 0, nil); err != nil {
						b.Fatal(err)
					}
					submitted := time.Since(t0)
					st := waitDone(b, s.d, id)
					took := time.Since(t0)
					b.StopTimer()
					cpu = procCPU(b, pid) - cpu
					peak := procMemory(b, pid, "VmHWM")
					if st.Job.State != "rejected" || st.Job.Error == nil || st.Job.Error.Code != "proof_rejected" {
						b.Fatalf("%s: %s %+v", id, st.Job.State, st.Job.Error)
					}
					s.growth = append(s.growth, mib(peak-before))
					s.cpu = append(s.cpu, float64(cpu)/1e6)
					s.submit = append(s.submit, float64(submitted)/float64(time.Millisecond))
					s.verify = append(s.verify, float64(verificationTime(b, s.d, id))/float64(time.Millisecond))
					s.took = append(s.took, float64(took)/float64(time.Millisecond))
					b.StartTimer()
				}
			}
			b.StopTimer()
			for _, s := range sides {
				g := slices.Max(s.growth)
				b.ReportMetric(loadbench.Median(s.growth), s.prefix+"peak-growth-MiB")
				b.ReportMetric(g, s.prefix+"max-growth-MiB")
				b.ReportMetric(g/mib(int64(len(c.artifact))), s.prefix+"max-growth-per-artifact")
				b.ReportMetric(loadbench.Median(s.cpu), s.prefix+"daemon-cpu-ms")
				b.ReportMetric(loadbench.Median(s.submit), s.prefix+"submit-ms")
				b.ReportMetric(loadbench.Median(s.verify), s.prefix+"produced-to-end-ms")
				b.ReportMetric(loadbench.Median(s.took), s.prefix+"submit-to-end-ms")
				b.ReportMetric(mib(procMemory(b, s.d.cmd.Process.Pid, "VmRSS")), s.prefix+"rss-after-MiB")
			}
		})
	}
}
