package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// A verify job carries its artifact inline, in base64, in its spec: the
// spec is 4/3 of the artifact. What the job may cost the supervisor's
// resident set (docs/supervisor.md, "A verify job's artifact inline") is
// inlineBound: the artifact decoded once, the spec four times at most
// (the frozen spec, with the store's page for its write or gRPC's
// buffer for the worker; and, when the write grows the store's file past
// bbolt's mapping, the one or two copies bbolt makes to remap it), and
// inlineSlack for the certificate decoder's window and the Go runtime's
// own. The request's bytes are collected once the spec is parsed.
const inlineSlack = 16 << 20

// inlineBound is what a verify job of artifact, whose spec is spec, may
// grow the supervisor's peak resident set by.
func inlineBound(artifact, spec []byte) int64 {
	return int64(len(artifact) + 4*len(spec) + inlineSlack)
}

// inlineBudget and inlineMemory are the verify jobs' limits. The memory
// is the worker's: it holds the spec, the artifact decoded and gRPC's
// buffers (about 6.5 times the artifact); the supervisor's verification
// of these artifacts takes little of it.
const (
	inlineBudget = 1_000_000
	inlineMemory = 384 << 20
)

// inlineCase is a verify job of QuoteProgram whose artifact is hostile
// and large.
type inlineCase struct {
	id       string
	artifact []byte
}

// inlineCases are two hostile artifacts of at most size bytes, both
// refused with proof_rejected: noise, which is no zstd frame (the
// supervisor's check refuses it at once), and a zstd frame of the job's
// honest statement followed by noise (the supervisor decodes the
// statement and refuses the first step). A frame of noise is a few bytes
// larger than the noise (a header per 128 KiB block).
func inlineCases(size int) []inlineCase {
	return []inlineCase{
		{"noise", hostile.Noise(size, 1)},
		{"statement-then-noise", artifacts.Compress(nil, hostile.PaddedStatement(inlineBudget, size-4<<10, 2))},
	}
}

func (c inlineCase) spec(t testing.TB, id string) []byte {
	lim := protocol.Limits{Reductions: inlineBudget, MemoryBytes: inlineMemory}
	return jobSpecWith(t, id, protocol.OpVerify, hostile.QuoteProgram, nil, lim, func(js *protocol.JobSpec) { js.Artifact = c.artifact })
}

// warmInline runs an execute job and a verify job of a 1 KiB artifact on
// d, so that what is measured after is the artifact's size, not the
// daemon's first verification (the decoder's tables, gRPC's pools).
func warmInline(t testing.TB, d *daemon, prefix string) {
	t.Helper()
	warm := jobSpec(t, prefix+"warm", protocol.OpExecute, hostile.QuoteProgram, nil, protocol.Limits{Reductions: inlineBudget})
	small := inlineCase{prefix + "warm-verify", artifacts.Compress(nil, hostile.PaddedStatement(inlineBudget, 1<<10, 3))}
	for _, w := range []struct {
		id, want string
		spec     []byte
	}{{prefix + "warm", "accepted", warm}, {small.id, "rejected", small.spec(t, small.id)}} {
		if _, err := d.client.Submit(context.Background(), w.spec, 0, nil); err != nil {
			t.Fatal(err)
		}
		if st := waitDone(t, d, w.id); string(st.Job.State) != w.want {
			t.Fatalf("warm-up %s: %s %+v", w.id, st.Job.State, st.Job.Error)
		}
	}
}

// TestSupervisorInlineArtifactWithinBound: a verify job whose artifact
// travels inline in its spec (8 MiB: 10.7 MiB of base64), submitted
// through the daemon's API, costs the daemon from the request to the
// job's end at most inlineBound of resident set, for each of two jobs in
// a row (the second must not find the first's garbage in its way: the
// daemon runs with GOGC=400). Both jobs' writes grow the store past
// bbolt's mapping (16, then 32 MiB), the worst case. The worker lies
// that the certificates verified, so the supervisor's own verification
// decides. Judged from the host: the daemon's peak RSS (/proc VmHWM,
// reset before each job) against its RSS before. Before the copies were
// cut, these jobs grew it by 184.7 and 106.1 MiB (23.1 and 13.3 times
// the artifact; the bound is 66.7 MiB); BenchmarkInlineArtifactJob
// measures 5 and 32 MiB side by side.
func TestSupervisorInlineArtifactWithinBound(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemonWorker(t, home, 1, lyingBin, "--log-level", "warn")
	defer d.stop(t)
	pid := d.cmd.Process.Pid
	warmInline(t, d, "")
	for _, c := range inlineCases(8 << 20) {
		spec := c.spec(t, c.id)
		before := procMemory(t, pid, "VmRSS")
		resetPeak(t, pid)
		if _, err := d.client.Submit(context.Background(), spec, 0, nil); err != nil {
			t.Fatal(err)
		}
		st := waitDone(t, d, c.id)
		peak := procMemory(t, pid, "VmHWM")
		bound := inlineBound(c.artifact, spec)
		t.Logf("%s (%.1f MiB artifact, %.1f MiB spec): %s %v; daemon RSS %.1f MiB, peak %.1f MiB (+%.1f, %.1f times the artifact; bound %.1f)",
			c.id, mib(int64(len(c.artifact))), mib(int64(len(spec))), st.Job.State, st.Job.Error, mib(before), mib(peak), mib(peak-before),
			float64(peak-before)/float64(len(c.artifact)), mib(bound))
		if st.Job.State != "rejected" || st.Job.Error == nil || st.Job.Error.Code != protocol.CodeProofRejected {
			t.Errorf("%s: %s %+v, want rejected proof_rejected", c.id, st.Job.State, st.Job.Error)
		}
		if peak-before > bound {
			t.Errorf("%s: the daemon's peak RSS grew by %.1f MiB, over the artifact, four times its spec and %d MiB (%.1f MiB)",
				c.id, mib(peak-before), inlineSlack>>20, mib(bound))
		}
	}
}

// TestRunInlineArtifactWithinBound is the one-shot run's side: `run --op
// verify --artifact CERT` of an 8 MiB artifact of noise peaks at most
// inlineBound above the same run of a 1 KiB artifact (the process's
// VmHWM, read while it runs), and the client's copies besides: the
// process is also the client, which reads the file and encodes the spec
// (both are collected when the job is admitted, but their pages may
// stay mapped). Before the copies were cut, it grew by 140.3 MiB (17.5
// times the artifact; the bound is 85.4 MiB).
func TestRunInlineArtifactWithinBound(t *testing.T) {
	requireIsolation(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "quote.nox")
	if err := os.WriteFile(prog, []byte(hostile.QuoteProgram), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(id string, artifact []byte) int64 {
		cert := filepath.Join(dir, id+".cert")
		if err := os.WriteFile(cert, artifact, 0o600); err != nil {
			t.Fatal(err)
		}
		home := newHome(t)
		peak, code := runPeakRSS(t, supervisorBin, "--home", home, "run", "--worker", lyingBin, "--isolation", "required",
			"--cgroup-name", cgroupName, prog, "--op", "verify", "--artifact", cert, "--job-id", id,
			"--budget", fmt.Sprint(inlineBudget), "--memory", fmt.Sprintf("%dMiB", inlineMemory>>20), "--log-level", "error")
		if code != exitRejected {
			t.Fatalf("%s: exit %d, want %d (rejected)", id, code, exitRejected)
		}
		return peak
	}
	small := run("small", hostile.Noise(1<<10, 3))
	c := inlineCases(8 << 20)[0]
	peak := run(c.id, c.artifact)
	spec := c.spec(t, c.id)
	bound := inlineBound(c.artifact, spec) + int64(len(c.artifact)+len(spec))
	t.Logf("%s (%.1f MiB artifact): peak RSS %.1f MiB against %.1f MiB for a 1 KiB artifact (+%.1f, %.1f times the artifact; bound %.1f)",
		c.id, mib(int64(len(c.artifact))), mib(peak), mib(small), mib(peak-small), float64(peak-small)/float64(len(c.artifact)), mib(bound))
	if peak-small > bound {
		t.Errorf("%s: the run's peak RSS grew by %.1f MiB, over twice the artifact, five times its spec and %d MiB (%.1f MiB)",
			c.id, mib(peak-small), inlineSlack>>20, mib(bound))
	}
}

// exitRejected is the CLI's exit code for a rejected proof.
const exitRejected = 5

// runPeakRSS runs bin with args and returns its peak resident set and
// its exit code. The peak is the last VmHWM read from /proc while it
// ran, every 2 ms: wait4's maxrss would be its workers' when larger, and
// the high-water mark read after the job's peak (its verification
// precedes the report and the supervisor's close) is that peak.
func runPeakRSS(t testing.TB, bin string, args ...string) (int64, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if hwm, ok := statusField(cmd.Process.Pid, "VmHWM"); ok {
			peak = max(peak, hwm)
		}
		select {
		case err := <-done:
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			if code != 0 && code != exitRejected {
				t.Logf("%s", errb.String())
			}
			return peak, code
		case <-tick.C:
		}
	}
}

// statusField is procMemory for a process that may have exited.
func statusField(pid int, field string) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
