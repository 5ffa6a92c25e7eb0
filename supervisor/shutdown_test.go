package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// An attempt the scheduler prepares while Close begins is interrupted
// like the others. Close took its list of running attempts before it
// stopped the scheduler: one prepared in between was neither told to
// stop nor killed at the grace, and Close waited for it to end on its
// own (here its 20 s deadline, by default an hour), far past the stop's
// bound. The hook holds the prepared attempt until Close has begun.
func TestCloseInterruptsAnAttemptPreparedMeanwhile(t *testing.T) {
	requireIsolation(t)
	closed := make(chan error, 1)
	s := openWith(t, t.TempDir(), launch.IsolationRequired, nil, func(sup *Supervisor) {
		sup.hooks.afterTake = func(time.Duration) {
			go func() { closed <- sup.Close(context.Background()) }()
			for !sup.isClosing() {
				time.Sleep(time.Millisecond)
			}
		}
	})
	id := s.submit(t, spec(t, "spin", protocol.OpExecute, loop(t, "spin.nox"), []uint64{60},
		protocol.Limits{Reductions: 1 << 60, WallTimeMS: 20_000}, nil))
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	off, err := OpenOffline(context.Background(), s.home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close(context.Background())
	st, err := off.Status(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	// Interrupted, its job is queued again for the next start, the
	// attempt not counted against its policy of one.
	if len(st.Attempts) != 1 || st.Attempts[0].Error == nil || st.Attempts[0].Error.Code != protocol.CodeCancelled ||
		st.Job.State != lifecycle.Queued || st.Job.Interrupted != 1 {
		var last any
		if len(st.Attempts) > 0 {
			last = st.Attempts[len(st.Attempts)-1].Error
		}
		t.Fatalf("job %s, %d attempt(s), the last's error %+v: want its one attempt interrupted by the shutdown", st.Job.State, len(st.Attempts), last)
	}
}
