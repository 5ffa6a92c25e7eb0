package limits

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type fakeKiller struct {
	mu    sync.Mutex
	calls int
	err   error
	at    time.Time
}

func (k *fakeKiller) Kill(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls++
	k.at = time.Now()
	return k.err
}

func (k *fakeKiller) n() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.calls
}

func TestWatchdogDeadlineEscalates(t *testing.T) {
	k := &fakeKiller{}
	var (
		mu       sync.Mutex
		order    []string
		triggers []Cause
	)
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	start := time.Now()
	w := StartWatchdog(k, WatchdogOptions{
		Deadline:  start.Add(30 * time.Millisecond),
		Grace:     50 * time.Millisecond,
		Cancel:    func(ctx context.Context) error { note("cancel"); return nil },
		OnTrigger: func(c Cause, _ time.Time) { note("trigger"); triggers = append(triggers, c) },
	})
	<-w.Done()
	rec := w.Stop()
	if rec.Cause != CauseDeadline || !rec.CancelSent || !rec.Killed || rec.ExitedInGrace {
		t.Fatalf("record %+v", rec)
	}
	if k.n() != 1 {
		t.Fatalf("kills %d", k.n())
	}
	if d := k.at.Sub(rec.TriggeredAt); d < 50*time.Millisecond {
		t.Errorf("killed %v after the trigger, before the grace ended", d)
	}
	if rec.TriggeredAt.Before(start.Add(30 * time.Millisecond)) {
		t.Errorf("triggered before the deadline")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 2 || order[0] != "trigger" || order[1] != "cancel" {
		t.Errorf("intent must be recorded before the cancel is sent: %v", order)
	}
	if len(triggers) != 1 || triggers[0] != CauseDeadline {
		t.Errorf("triggers %v", triggers)
	}
}

func TestWatchdogCancelExitInGrace(t *testing.T) {
	k := &fakeKiller{}
	w := StartWatchdog(k, WatchdogOptions{
		Deadline: time.Now().Add(time.Hour),
		Grace:    5 * time.Second,
		Cancel: func(ctx context.Context) error {
			return errors.New("worker said no")
		},
	})
	if !w.Cancel() {
		t.Fatal("first Cancel must start the escalation")
	}
	if w.Cancel() {
		t.Fatal("second Cancel must not")
	}
	time.Sleep(10 * time.Millisecond)
	w.Exited() // the worker stopped within the grace period
	rec := w.Stop()
	if rec.Cause != CauseCancel || !rec.ExitedInGrace || rec.Killed || rec.CancelError != "worker said no" {
		t.Fatalf("record %+v", rec)
	}
	if k.n() != 0 {
		t.Fatalf("killed a worker that exited in grace")
	}
}

func TestWatchdogStopBeforeDeadline(t *testing.T) {
	k := &fakeKiller{}
	w := StartWatchdog(k, WatchdogOptions{Deadline: time.Now().Add(30 * time.Millisecond)})
	rec := w.Stop()
	time.Sleep(60 * time.Millisecond)
	if rec.Cause != CauseNone || k.n() != 0 || w.Cancel() {
		t.Fatalf("record %+v kills %d", rec, k.n())
	}
}

func TestWatchdogStuckCancelStillKills(t *testing.T) {
	k := &fakeKiller{}
	release := make(chan struct{})
	defer close(release)
	w := StartWatchdog(k, WatchdogOptions{
		Grace: 20 * time.Millisecond,
		Cancel: func(ctx context.Context) error {
			<-release // ignores its context
			return nil
		},
	})
	w.Cancel()
	select {
	case <-w.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a stuck cancel callback delayed the kill")
	}
	rec := w.Stop()
	if !rec.Killed || rec.CancelError == "" {
		t.Fatalf("record %+v", rec)
	}
}

func TestWatchdogNoCancelKillsAtOnce(t *testing.T) {
	k := &fakeKiller{err: errors.New("boom")}
	w := StartWatchdog(k, WatchdogOptions{Deadline: time.Now().Add(-time.Second), Grace: time.Hour})
	<-w.Done()
	rec := w.Stop()
	if rec.Cause != CauseDeadline || rec.CancelSent || rec.Killed || rec.KillError != "boom" {
		t.Fatalf("record %+v", rec)
	}
	var nilKiller *Watchdog = StartWatchdog(nil, WatchdogOptions{})
	nilKiller.Cancel()
	if rec := nilKiller.Stop(); rec.KillError == "" {
		t.Fatalf("nil killer: %+v", rec)
	}
}

func TestRecordWithOutcome(t *testing.T) {
	if r := (Record{}).WithOutcome(Outcome{OOMKilled: true}); r.Cause != CauseOOM || !r.OOMKilled {
		t.Errorf("%+v", r)
	}
	if r := (Record{Cause: CauseDeadline}).WithOutcome(Outcome{OOMKilled: true}); r.Cause != CauseDeadline || !r.OOMKilled {
		t.Errorf("%+v", r)
	}
	if r := (Record{}).WithOutcome(Outcome{}); r.Cause != CauseNone {
		t.Errorf("%+v", r)
	}
}

func TestWatchdogConcurrentTriggers(t *testing.T) {
	k := &fakeKiller{}
	w := StartWatchdog(k, WatchdogOptions{Deadline: time.Now().Add(time.Millisecond)})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Cancel()
			w.Exited()
		}()
	}
	wg.Wait()
	rec := w.Stop()
	if rec.Cause == CauseNone || k.n() > 1 {
		t.Fatalf("record %+v kills %d", rec, k.n())
	}
}
