package supervisor

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// List is in submission order, whatever the ids; a limit keeps the most
// recently submitted, still oldest first; a state filters.
func TestListOrderAndLimit(t *testing.T) {
	s, _ := openStub(t, t.TempDir(), nil)
	ctx := context.Background()
	for _, id := range []string{"zz", "aa", "mm", "bb"} {
		if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, id, protocol.OpExecute, add2, nil, protocol.Limits{}, nil)}); err != nil {
			t.Fatal(err)
		}
	}
	endStub(t, s, nil, "") // zz accepted
	ids := func(jobs []*store.Job) []string {
		var out []string
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	for _, c := range []struct {
		state lifecycle.State
		limit int
		want  []string
	}{
		{"", 0, []string{"zz", "aa", "mm", "bb"}},
		{"", 2, []string{"mm", "bb"}},
		{"", 10, []string{"zz", "aa", "mm", "bb"}},
		{lifecycle.Queued, 0, []string{"aa", "mm", "bb"}},
		{lifecycle.Queued, 1, []string{"bb"}},
		{lifecycle.Accepted, 5, []string{"zz"}},
	} {
		jobs, err := s.List(ctx, c.state, c.limit)
		if err != nil || !slices.Equal(ids(jobs), c.want) {
			t.Errorf("list %q limit %d: %v %v, want %v", c.state, c.limit, ids(jobs), err, c.want)
		}
	}
}

// WaitEvents wakes for an event without a change of state (a cancel
// request of a running attempt), and at the end of the job.
func TestWaitEvents(t *testing.T) {
	s, _ := openStub(t, t.TempDir(), nil)
	ctx := context.Background()
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, "j", protocol.OpExecute, add2, nil, protocol.Limits{}, nil)}); err != nil {
		t.Fatal(err)
	}
	a, _, err := s.prepareNext(ctx)
	if err != nil || a == nil {
		t.Fatal(err)
	}
	if err := s.transition(ctx, a, lifecycle.Running, "worker launched", nil); err != nil {
		t.Fatal(err)
	}
	ev, ended, err := s.WaitEvents(ctx, "j", 0)
	if err != nil || ended || len(ev) != 3 {
		t.Fatalf("first wait: %d events, ended %v, %v", len(ev), ended, err)
	}
	last := ev[len(ev)-1].Seq
	got := make(chan []store.Event, 1)
	go func() {
		ev, _, _ := s.WaitEvents(ctx, "j", last)
		got <- ev
	}()
	time.Sleep(20 * time.Millisecond) // let it wait (it must also work if it did not yet)
	a.requestCancel("test", false)    // the attempt's goroutine would now tell the worker
	if _, err := s.Cancel(ctx, "j", "follow me"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-got:
		if len(ev) != 1 || !strings.Contains(ev[0].Reason, "cancel requested: follow me") {
			t.Fatalf("woke with %+v", ev)
		}
		last = ev[0].Seq
	case <-time.After(30 * time.Second):
		t.Fatal("WaitEvents did not wake for the cancel request")
	}
	s.finish(ctx, a, s.stoppedOutcome(a, "cancel", ""))
	s.unregister(a)
	ev, ended, err = s.WaitEvents(ctx, "j", last)
	if err != nil || !ended || len(ev) != 1 || ev[0].To != lifecycle.Cancelled || ev[0].Reason != "cancelled: test" {
		t.Fatalf("after the end: %+v ended %v %v", ev, ended, err)
	}
	// Nothing newer: an ended job answers at once, with none.
	if ev, ended, err := s.WaitEvents(ctx, "j", ev[0].Seq); err != nil || !ended || len(ev) != 0 {
		t.Fatalf("ended job: %+v %v %v", ev, ended, err)
	}
}

// Start-up logs what recovery did: here one attempt the previous boot
// left running (now unknown) and its job queued again.
func TestRecoveryIsLogged(t *testing.T) {
	home := t.TempDir()
	s, _ := openStub(t, home, nil)
	ctx := context.Background()
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, "r", protocol.OpExecute, add2, nil, protocol.Limits{}, nil), Retry: &store.RetryPolicy{MaxAttempts: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, "w", protocol.OpExecute, add2, nil, protocol.Limits{}, nil)}); err != nil {
		t.Fatal(err)
	}
	a, _, err := s.prepareNext(ctx)
	if err != nil || a == nil {
		t.Fatal(err)
	}
	if err := s.transition(ctx, a, lifecycle.Running, "worker launched", nil); err != nil {
		t.Fatal(err)
	}
	s.unregister(a)
	// The boot ends without recording the attempt's end, as a crash does.
	s.store.Close()
	s.sandboxes.Close()
	s.closing = true

	s2, logs := openStub(t, home, nil)
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "recovered the previous boot") {
			line = l
		}
	}
	for _, want := range []string{"boots=2", "unknown_attempts=1", "requeued=1", "ended_unknown=0", "still_queued=1"} {
		if !strings.Contains(line, want) {
			t.Errorf("recovery log %q lacks %s\n%s", line, want, logs)
		}
	}
	if !strings.Contains(logs.String(), "recovery: attempt of the previous boot is unknown") || !strings.Contains(logs.String(), "job=r") {
		t.Errorf("per-job recovery not logged:\n%s", logs)
	}
	st, err := s2.Status(ctx, "r")
	if err != nil || st.Job.State != lifecycle.Queued || st.Attempts[0].State != lifecycle.Unknown {
		t.Fatalf("after recovery: %+v %v", st, err)
	}
}

// Jobs pages in id order from the first id above after, whatever the
// submission order; a state filters.
func TestJobsAfter(t *testing.T) {
	s, _ := openStub(t, t.TempDir(), nil)
	ctx := context.Background()
	for _, id := range []string{"d", "b", "a", "c", "bb"} {
		if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, id, protocol.OpExecute, add2, nil, protocol.Limits{}, nil)}); err != nil {
			t.Fatal(err)
		}
	}
	endStub(t, s, nil, "") // d accepted
	for _, c := range []struct {
		state lifecycle.State
		after string
		want  []string
	}{
		{"", "", []string{"a", "b", "bb", "c", "d"}},
		{"", "b", []string{"bb", "c", "d"}},
		{"", "ba", []string{"bb", "c", "d"}},
		{"", "d", nil},
		{lifecycle.Queued, "b", []string{"bb", "c"}},
		{lifecycle.Accepted, "a", []string{"d"}},
	} {
		var got []string
		if err := s.Jobs(ctx, c.state, c.after, func(j *store.Job) bool { got = append(got, j.ID); return true }); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("after %q state %q: %v %v, want %v", c.after, c.state, got, err, c.want)
		}
	}
}
