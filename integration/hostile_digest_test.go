package integration

import (
	"context"
	"slices"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// digestAttack is a verify job of one of the digest attacks of issue #26
// (internal/hostile/digests.go) in a job of memory bytes.
type digestAttack struct {
	id       string
	program  string
	budget   uint64
	memory   uint64
	artifact []byte
	want     protocol.Code // "" for accepted
}

// digestAttacks are the attacks at the given sizes: hashes sharing a
// list in a job of shareMemory, then dense axis-0 steps (valid, and
// forged so that only the digest check after the walk fails) in a job of
// 64 MiB, as in the issue. The smaller one first: what a larger one
// leaves resident would hide its growth.
func digestAttacks(axisZero, list, hashes int, shareMemory uint64) []digestAttack {
	return []digestAttack{
		// Digests and atoms do not compress: the default level, not
		// Compress's slower better one.
		{"shared-operand", hostile.SharedOperandProgram(list, hashes), hostile.SharedOperandBudget(list, hashes), shareMemory,
			artifacts.Compress(nil, hostile.SharedOperand(list, hashes)), ""},
		{"axis-zero", hostile.AxisZeroProgram(axisZero), hostile.AxisZeroBudget(axisZero), 64 << 20,
			hostile.Compress(hostile.AxisZero(axisZero)), ""},
		{"axis-zero-forged", hostile.AxisZeroProgram(axisZero), hostile.AxisZeroBudget(axisZero), 64 << 20,
			hostile.Compress(hostile.AxisZeroForged(axisZero)), protocol.CodeProofRejected},
	}
}

// spec is the attack's verify job.
func (a digestAttack) spec(t testing.TB, id string) []byte {
	lim := protocol.Limits{Reductions: a.budget, MemoryBytes: a.memory}
	return jobSpecWith(t, id, protocol.OpVerify, a.program, nil, lim, func(js *protocol.JobSpec) { js.Artifact = a.artifact })
}

// TestSupervisorVerifiesDigestAttacksWithinTheJob: a worker that lies
// about verify jobs (it says verified without looking) hands the
// supervisor the digest attacks of issue #26 to verify itself, in a
// daemon at GOMAXPROCS 16: 2^22 dense axis-0 steps over 136 nodes (8.4
// MB, 8 KB compressed) in a job of 64 MiB, valid and forged, and 4,096
// hashes of operands that share a list of 65,536 pairs (102,580 nodes)
// in a job of 48 MiB. Judged from the host: each job ends as its
// certificate deserves (accepted, or proof_rejected for the forged one),
// and the daemon's peak resident set (/proc VmHWM, reset before each
// job) grows by at most the job's memory limit. Before the deferred
// checks were deduplicated and the digests shared, the axis-0 steps
// queued 12 bytes each (the 14 KB artifact took the daemon to
// 792 MB with --memory 64MiB) and each of the 16 cores digested the
// shared list into a memo of its own.
func TestSupervisorVerifiesDigestAttacksWithinTheJob(t *testing.T) {
	requireIsolation(t)
	home := parallelHome(t)
	d := startDaemonEnv(t, supervisorBin, home, 1, lyingBin, []string{"GOMAXPROCS=16"}, "--log-level", "warn")
	defer d.stop(t)
	ctx := context.Background()
	pid := d.cmd.Process.Pid
	warm := jobSpec(t, "warm", protocol.OpExecute, hostile.QuoteProgram, nil, protocol.Limits{Reductions: 1000})
	if _, err := d.client.Submit(ctx, warm, 0, nil); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, d, "warm"); st.Job.State != "accepted" {
		t.Fatalf("warm-up: %s %+v", st.Job.State, st.Job.Error)
	}
	for _, a := range digestAttacks(22, 16, 12, 48<<20) {
		before := procMemory(t, pid, "VmRSS")
		resetPeak(t, pid)
		cpu := procCPU(t, pid)
		if _, err := d.client.Submit(ctx, a.spec(t, a.id), 0, nil); err != nil {
			t.Fatal(err)
		}
		st := waitDone(t, d, a.id)
		cpu = procCPU(t, pid) - cpu
		peak := procMemory(t, pid, "VmHWM")
		switch {
		case a.want == "" && st.Job.State != "accepted":
			t.Fatalf("%s: %s %+v", a.id, st.Job.State, st.Job.Error)
		case a.want != "" && (st.Job.State != "rejected" || st.Job.Error == nil || st.Job.Error.Code != a.want):
			t.Fatalf("%s: %s %+v, want %s", a.id, st.Job.State, st.Job.Error, a.want)
		}
		if a.want == "" {
			res, err := protocol.ParseResult(st.Job.Result)
			if err != nil || !slices.Equal(res.Output, []uint64{0}) {
				t.Fatalf("%s: result %s: %v", a.id, st.Job.Result, err)
			}
		}
		t.Logf("%s (%d-byte artifact, memory %d MiB): %s; daemon RSS %.1f MiB, peak %.1f MiB (+%.1f); daemon CPU %.0f ms, produced → end %v",
			a.id, len(a.artifact), a.memory>>20, st.Job.State, mib(before), mib(peak), mib(peak-before), float64(cpu)/1e6, verificationTime(t, d, a.id))
		if peak-before > int64(a.memory) {
			t.Errorf("%s: the daemon's peak RSS grew by %.1f MiB, over the job's %d MiB", a.id, mib(peak-before), a.memory>>20)
		}
	}
}
