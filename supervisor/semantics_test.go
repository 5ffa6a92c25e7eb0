package supervisor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// A clean shutdown interrupts running attempts and queues their jobs for
// the next start whatever their retry policy: the attempt is counted
// (Interrupted) but not against the policy, so a job of one attempt is
// not lost to a stop. The next boot runs both again. (A job without an
// attempt left used to end cancelled: a stop cost it its only attempt.)
func TestShutdownRequeues(t *testing.T) {
	requireIsolation(t)
	home := t.TempDir()
	s := open(t, home, launch.IsolationRequired, nil)
	ctx := context.Background()
	spin := loop(t, "spin.nox")
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, "again", protocol.OpExecute, spin, []uint64{60}, protocol.Limits{Reductions: 1 << 60}, nil),
		Retry: &store.RetryPolicy{MaxAttempts: 2}}); err != nil {
		t.Fatal(err)
	}
	s.submit(t, spec(t, "once", protocol.OpExecute, spin, []uint64{60}, protocol.Limits{Reductions: 1 << 60}, nil))
	s.waitState(t, "again", lifecycle.Running)
	s.waitState(t, "once", lifecycle.Running)
	s.close(t)

	s2 := open(t, home, launch.IsolationRequired, nil)
	defer s2.close(t)
	for id, allowed := range map[string]uint32{"again": 3, "once": 2} {
		st, err := s2.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if a := st.Attempts[0]; a.State != lifecycle.Cancelled || a.Error == nil || !strings.Contains(a.Error.Message, "interrupted by the supervisor's shutdown") {
			t.Fatalf("%s, attempt 1: %+v", id, a)
		}
		if st.Job.Interrupted != 1 || st.Job.AttemptsAllowed() != allowed {
			t.Fatalf("%s: %d interrupted, %d attempts allowed, want 1 and %d", id, st.Job.Interrupted, st.Job.AttemptsAllowed(), allowed)
		}
		ev, _ := s2.Events(ctx, id)
		requeued := false
		for _, e := range ev {
			if strings.Contains(e.Reason, fmt.Sprintf("queued for the next start or another host (attempt 2 of %d", allowed)) {
				requeued = true
			}
		}
		if !requeued {
			t.Fatalf("%s: no requeue event: %+v", id, ev)
		}
		// The next boot runs attempt 2 (here cancelled, to end the test).
		s2.waitState(t, id, lifecycle.Running)
		if _, err := s2.Cancel(ctx, id, "done"); err != nil {
			t.Fatal(err)
		}
		if st := s2.wait(t, id); st.Job.Attempts != 2 || st.Attempts[1].State != lifecycle.Cancelled {
			t.Fatalf("%s after restart: %d attempts, %+v", id, st.Job.Attempts, st.Attempts)
		}
	}
}

// Deterministic failures are not retried by default whatever the policy
// allows: the same job would fail the same way. A retryable one
// (deadline) is, and the retry says why.
func TestDeterministicFailuresNotRetried(t *testing.T) {
	requireIsolation(t)
	s := open(t, t.TempDir(), launch.IsolationRequired, nil)
	defer s.close(t)
	ctx := context.Background()
	three := &store.RetryPolicy{MaxAttempts: 3}
	for id, b := range map[string][]byte{
		"budget": spec(t, "budget", protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{Reductions: 2}, nil),
		"exec":   spec(t, "exec", protocol.OpExecute, "[8 [1 0]]", nil, protocol.Limits{}, nil),
	} {
		if _, _, err := s.Submit(ctx, SubmitRequest{Spec: b, Retry: three}); err != nil {
			t.Fatal(err)
		}
		if st := s.wait(t, id); st.Job.State != lifecycle.Failed || st.Job.Attempts != 1 || st.Job.Error.Retryable {
			t.Errorf("%s: %s after %d attempts, %+v", id, st.Job.State, st.Job.Attempts, st.Job.Error)
		}
	}
	// Memory: the worker's cell guard decides it (deterministic, one
	// attempt), or the kernel does (the environment, retried).
	grow := spec(t, "grow", protocol.OpExecute, loop(t, "grow.nox"), []uint64{40}, protocol.Limits{Reductions: 1 << 60, MemoryBytes: 64 << 20}, nil)
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: grow, Retry: three}); err != nil {
		t.Fatal(err)
	}
	st := s.wait(t, "grow")
	if st.Job.Error == nil || st.Job.Error.Code != protocol.CodeMemoryExhausted {
		t.Fatalf("grow: %s %+v", st.Job.State, st.Job.Error)
	}
	byGuard := !st.Attempts[0].Telemetry.OOM
	t.Logf("grow: decided by the cell guard %v, %d attempts", byGuard, st.Job.Attempts)
	if byGuard && (st.Job.Attempts != 1 || st.Job.Error.Retryable || !strings.Contains(st.Job.Error.Message, "cell guard")) {
		t.Errorf("cell guard memory_exhausted retried: %d attempts, %+v", st.Job.Attempts, st.Job.Error)
	}
	if !byGuard && st.Attempts[0].Error.Retryable != true {
		t.Errorf("a cgroup OOM kill is not retryable: %+v", st.Attempts[0].Error)
	}
	// A deadline is retried, and the event says why.
	dl := spec(t, "deadline", protocol.OpExecute, loop(t, "spin.nox"), []uint64{60}, protocol.Limits{Reductions: 1 << 60, WallTimeMS: 200}, nil)
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: dl, Retry: &store.RetryPolicy{MaxAttempts: 2}}); err != nil {
		t.Fatal(err)
	}
	if st := s.wait(t, "deadline"); st.Job.Attempts != 2 || st.Job.Error.Code != protocol.CodeDeadlineExceeded {
		t.Fatalf("deadline: %d attempts, %+v", st.Job.Attempts, st.Job.Error)
	}
	ev, _ := s.Events(ctx, "deadline")
	why := false
	for _, e := range ev {
		if strings.HasPrefix(e.Reason, "attempt 1 failed (deadline_exceeded: wall-clock limit of 200 ms exceeded); retry 2 of 2") {
			why = true
		}
	}
	if !why {
		t.Errorf("the retry does not say why: %+v", ev)
	}
}

// A verify job whose certificate is refused ends rejected (its attempt
// too), with the node's own reason; an accepted attempt reports the CPU
// time its cgroup counted.
func TestVerifyRejectedAndCPUTime(t *testing.T) {
	requireIsolation(t)
	s := open(t, t.TempDir(), launch.IsolationRequired, nil)
	defer s.close(t)
	ctx := context.Background()
	prove := s.submit(t, spec(t, "p", protocol.OpProve, loop(t, "spin.nox"), []uint64{10}, protocol.Limits{Reductions: 1 << 40}, nil))
	st := s.wait(t, prove)
	if st.Job.State != lifecycle.Accepted {
		t.Fatalf("prove: %s %+v", st.Job.State, st.Job.Error)
	}
	res, _ := protocol.ParseResult(st.Job.Result)
	if res.Telemetry.CPUTimeMS == 0 || st.Attempts[0].Telemetry.CPUTime <= 0 ||
		uint64(st.Attempts[0].Telemetry.CPUTime.Milliseconds()) != res.Telemetry.CPUTimeMS {
		t.Errorf("cpu time: result %d ms, attempt %s", res.Telemetry.CPUTimeMS, st.Attempts[0].Telemetry.CPUTime)
	}
	if wall := time.Duration(res.Telemetry.WallTimeMS) * time.Millisecond; time.Duration(res.Telemetry.CPUTimeMS)*time.Millisecond > 8*wall+time.Millisecond {
		t.Errorf("cpu time %d ms beyond the wall time %s", res.Telemetry.CPUTimeMS, wall)
	}
	certBytes := s.acceptedCertificate(t, prove, st, res)
	other := s.submit(t, spec(t, "v-other", protocol.OpVerify, loop(t, "spin.nox"), []uint64{11}, protocol.Limits{Reductions: 1 << 40}, func(js *protocol.JobSpec) {
		js.Artifact = certBytes // a valid certificate of another computation
	}))
	tampered := append([]byte(nil), certBytes...)
	tampered[len(tampered)/2] ^= 0x40
	bad := s.submit(t, spec(t, "v-bad", protocol.OpVerify, loop(t, "spin.nox"), []uint64{10}, protocol.Limits{Reductions: 1 << 40}, func(js *protocol.JobSpec) {
		js.Artifact = tampered
	}))
	for id, codes := range map[string][]protocol.Code{other: {protocol.CodeClaimMismatch}, bad: {protocol.CodeProofRejected, protocol.CodeClaimMismatch}} {
		st := s.wait(t, id)
		if st.Job.State != lifecycle.Rejected || st.Attempts[0].State != lifecycle.Rejected || st.Job.Error == nil || !slices.Contains(codes, st.Job.Error.Code) {
			t.Errorf("%s: %s / %s %+v, want rejected %v", id, st.Job.State, st.Attempts[0].State, st.Job.Error, codes)
		}
	}
	jobs, _ := s.List(ctx, lifecycle.Rejected, 0)
	if len(jobs) != 2 {
		t.Errorf("list --state rejected: %d jobs", len(jobs))
	}
}
