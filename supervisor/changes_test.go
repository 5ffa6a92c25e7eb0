package supervisor

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// The change log answers each job once at its last change, resets a
// cursor it no longer covers (too old, of another boot, before a gap),
// and keeps at most changeLogSize changes.
func TestChangeLog(t *testing.T) {
	s := &Supervisor{id: identity{boot: "b1"}}
	ctx := context.Background()
	now, err := s.JobChanges(ctx, "", false)
	if err != nil || now.Cursor != "b1.0" || len(now.Jobs) != 0 || now.Reset {
		t.Fatalf("the cursor of now: %+v %v", now, err)
	}
	for _, id := range []string{"a", "b", "a", "c", "invocation/x"} {
		s.changes.notify(id)
	}
	ch, err := s.JobChanges(ctx, now.Cursor, false)
	if err != nil || !slices.Equal(ch.Jobs, []string{"b", "a", "c"}) || ch.Cursor != "b1.4" || ch.Reset {
		t.Fatalf("after %s: %+v %v", now.Cursor, ch, err)
	}
	if ch, _ := s.JobChanges(ctx, "b1.3", false); !slices.Equal(ch.Jobs, []string{"c"}) {
		t.Fatalf("after b1.3: %+v", ch)
	}
	for _, c := range []string{"b0.1", "b1.5", "b1", "b1.x", "b1.-1"} {
		if ch, _ := s.JobChanges(ctx, c, false); !ch.Reset || len(ch.Jobs) != 0 {
			t.Errorf("cursor %q: %+v, want a reset", c, ch)
		}
	}
	// More changes than the log keeps: an old cursor is reset, a recent
	// one is answered.
	for i := range changeLogSize + 10 {
		s.changes.notify(fmt.Sprintf("j%d", i))
	}
	if ch, _ := s.JobChanges(ctx, "b1.4", false); !ch.Reset {
		t.Fatalf("a cursor older than the log: %+v", ch)
	}
	last := fmt.Sprintf("b1.%d", 4+changeLogSize+10-2)
	if ch, _ := s.JobChanges(ctx, last, false); ch.Reset || !slices.Equal(ch.Jobs, []string{fmt.Sprintf("j%d", changeLogSize+8), fmt.Sprintf("j%d", changeLogSize+9)}) {
		t.Fatalf("a recent cursor: %+v", ch)
	}
	if n := len(s.changes.log.ring); n != changeLogSize {
		t.Fatalf("the log holds %d slots", n)
	}
	// A gap (the cluster's watch missed changes) resets every cursor
	// before it.
	s.changes.notifyAll()
	if ch, _ := s.JobChanges(ctx, last, false); !ch.Reset {
		t.Fatalf("a cursor before a gap: %+v", ch)
	}
	// A wait ends at the next change, or with its context.
	cur, _ := s.JobChanges(ctx, "", false)
	done := make(chan Changes, 1)
	go func() {
		ch, _ := s.JobChanges(ctx, cur.Cursor, true)
		done <- ch
	}()
	s.changes.notify("z")
	if ch := <-done; !slices.Equal(ch.Jobs, []string{"z"}) {
		t.Fatalf("the wait answered %+v", ch)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.JobChanges(cctx, fmt.Sprintf("b1.%d", 4+changeLogSize+10+1), true); err == nil {
		t.Fatal("a wait whose context ended answered no error")
	}
}
