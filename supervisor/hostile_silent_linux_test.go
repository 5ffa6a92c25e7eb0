package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// Workers that complete go-plugin's handshake and then never answer
// (issue #26, item 5): "silent" never reads its connection, "mute"
// speaks HTTP/2 but answers no call. The job's wall-clock limit, counted
// from the launch, ends the attempt: failed deadline_exceeded, the
// worker killed at the deadline, and the attempt over within three times
// the limit. Before, the silent worker held the attempt for gRPC's 20 s
// connection timeout and failed it as io_error, and the mute one held it
// for ever (the deadline's timer started only once the worker had
// accepted the job).
func TestHostileWorkerSilentMeetsItsDeadline(t *testing.T) {
	const limit = 2000 // ms
	for _, attack := range []string{"silent", "mute"} {
		t.Run(attack, func(t *testing.T) {
			e := hostileEnvFor(t, attack)
			id := e.s.submit(t, spec(t, attack, protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{WallTimeMS: limit}, nil))
			st := e.s.wait(t, id)
			j := st.Job
			if j.State != lifecycle.Failed || j.Error == nil || j.Error.Code != protocol.CodeDeadlineExceeded || len(st.Attempts) != 1 {
				t.Fatalf("job %s %+v after %d attempts, want failed deadline_exceeded after one", j.State, j.Error, len(st.Attempts))
			}
			tel := st.Attempts[0].Telemetry
			if tel.Killed != "deadline" {
				t.Errorf("the worker was killed by %q, want the deadline", tel.Killed)
			}
			if tel.WallTime > 3*limit*time.Millisecond {
				t.Errorf("the attempt took %v, limit %d ms", tel.WallTime, limit)
			}
			t.Logf("%s: %s after %v", attack, j.Error.Message, tel.WallTime)
			e.s.close(t)
		})
	}
}

// A cancel reaches a job whose worker never accepted it: the attempt is
// cancelled once the cancel grace has passed, not at its deadline ten
// minutes on (before, nothing but the worker's answer ended the wait).
func TestHostileWorkerMuteCancelled(t *testing.T) {
	e := hostileEnvFor(t, "mute")
	id := e.s.submit(t, spec(t, "mute-cancel", protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{WallTimeMS: 600_000}, nil))
	e.s.waitState(t, id, lifecycle.Running)
	if _, err := e.s.Cancel(context.Background(), id, "never answered"); err != nil {
		t.Fatal(err)
	}
	st := e.s.wait(t, id)
	if st.Job.State != lifecycle.Cancelled || len(st.Attempts) != 1 || st.Attempts[0].Telemetry.Killed != "cancel" {
		t.Fatalf("job %s %+v, attempts %d, want cancelled, its worker killed after the grace", st.Job.State, st.Job.Error, len(st.Attempts))
	}
	e.s.close(t)
}
