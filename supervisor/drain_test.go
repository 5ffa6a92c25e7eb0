package supervisor

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// A drain takes no job from the queue, lets a short attempt end, and at
// its deadline is done with the attempt still running named as handed
// back; a second drain keeps the earlier deadline and a shorter one
// brings it forward. Close then interrupts what is handed back, and its
// job is queued again, the interruption not counted against its policy.
func TestDrainHandsBackAtTheDeadline(t *testing.T) {
	requireIsolation(t)
	home := t.TempDir()
	s := open(t, home, launch.IsolationRequired, func(c *Config) { c.Slots = 2 })
	ctx := context.Background()
	spin := loop(t, "spin.nox")
	s.submit(t, spec(t, "long", protocol.OpExecute, spin, []uint64{60}, protocol.Limits{Reductions: 1 << 60}, nil))
	s.submit(t, spec(t, "short", protocol.OpExecute, spin, []uint64{60}, protocol.Limits{Reductions: 1 << 60}, nil))
	s.waitState(t, "long", lifecycle.Running)
	s.waitState(t, "short", lifecycle.Running)

	st := s.Drain(time.Hour)
	if !st.Draining || st.Done || !slices.Equal(st.Running, []string{"long", "short"}) {
		t.Fatalf("drain: %+v", st)
	}
	s.submit(t, spec(t, "later", protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{}, nil))
	if again := s.Drain(2 * time.Hour); !again.Deadline.Equal(st.Deadline) {
		t.Fatalf("a later deadline moved the drain's: %v → %v", st.Deadline, again.Deadline)
	}
	// One attempt ends on its own while the drain waits (here cancelled).
	if _, err := s.Cancel(ctx, "short", "ends during the drain"); err != nil {
		t.Fatal(err)
	}
	if st := s.wait(t, "short"); st.Job.State != lifecycle.Cancelled {
		t.Fatalf("short: %s", st.Job.State)
	}
	// Its goroutine lets go of it just after its end is recorded.
	for deadline := time.Now().Add(time.Minute); !slices.Equal(s.DrainStatus().Running, []string{"long"}); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("short is still running: %+v", s.DrainStatus())
		}
	}
	s.Drain(0) // brings the deadline forward: done at once
	select {
	case <-s.Drained():
	case <-time.After(time.Minute):
		t.Fatal("the drain was not done at its new deadline")
	}
	if st := s.DrainStatus(); !st.Done || !slices.Equal(st.Running, []string{"long"}) {
		t.Fatalf("done: %+v", st)
	}
	if later, err := s.Status(ctx, "later"); err != nil || later.Job.State != lifecycle.Queued || later.Job.Attempts != 0 {
		t.Fatalf("later, submitted during the drain: %+v %v", later, err)
	}
	s.close(t)
	off, err := OpenOffline(ctx, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close(ctx)
	long, err := off.Status(ctx, "long")
	if err != nil || long.Job.State != lifecycle.Queued || long.Job.Interrupted != 1 || long.Job.Retry.MaxAttempts != 1 {
		t.Fatalf("long after the drain's close: %+v %v", long, err)
	}
}
