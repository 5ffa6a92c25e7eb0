package limits

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Cause says why an attempt ended early. The supervisor records it itself,
// before it acts, and never infers it from an exit status (exit 137 is
// equally an OOM kill, a deadline kill or an operator's kill -9).
type Cause string

const (
	CauseNone     Cause = ""         // ended on its own
	CauseCancel   Cause = "cancel"   // → cancelled
	CauseDeadline Cause = "deadline" // → failed/deadline_exceeded
	CauseOOM      Cause = "oom"      // → failed/memory_exhausted (from the oom_kill counter)
)

// Killer kills a whole process tree and waits until it is gone; *Group is
// one. A sandbox without cgroups can supply one that kills PID 1 of the
// worker's PID namespace.
type Killer interface {
	Kill(ctx context.Context) error
}

// WatchdogOptions configures the kill escalation of one attempt.
type WatchdogOptions struct {
	// Deadline is the wall-clock deadline; zero means none (only Cancel
	// triggers the escalation).
	Deadline time.Time
	// Grace is how long the worker may take to stop after Cancel was
	// called before the whole tree is killed.
	Grace time.Duration
	// KillTimeout bounds the tree kill (default 10 s).
	KillTimeout time.Duration
	// Cancel asks the worker to stop cooperatively (e.g. the Cancel RPC).
	// It gets a context that ends with the grace period. Nil: kill at once.
	Cancel func(ctx context.Context) error
	// OnTrigger runs once, synchronously, before anything is sent to the
	// worker, so the supervisor can durably record its intent first.
	OnTrigger func(c Cause, at time.Time)
}

// Record is the supervisor's own account of an escalation.
type Record struct {
	Cause         Cause     `json:"cause,omitempty"`
	TriggeredAt   time.Time `json:"triggered_at,omitzero"`
	CancelSent    bool      `json:"cancel_sent,omitempty"`
	CancelError   string    `json:"cancel_error,omitempty"`
	ExitedInGrace bool      `json:"exited_in_grace,omitempty"`
	Killed        bool      `json:"killed,omitempty"`
	KilledAt      time.Time `json:"killed_at,omitzero"`
	KillError     string    `json:"kill_error,omitempty"`
	OOMKilled     bool      `json:"oom_killed,omitempty"`
}

// WithOutcome folds the cgroup outcome (read after reaping) into the
// record. An OOM kill becomes the cause only if the supervisor had not
// already decided to end the attempt: what the supervisor did first is what
// the job is told.
func (r Record) WithOutcome(o Outcome) Record {
	r.OOMKilled = o.OOMKilled
	if r.Cause == CauseNone && o.OOMKilled {
		r.Cause = CauseOOM
	}
	return r
}

// Watchdog runs the escalation of one attempt: on the deadline or on
// Cancel it records the cause, calls the cancel callback, waits for the
// grace period, and kills the whole tree if the worker has not exited.
type Watchdog struct {
	k     Killer
	o     WatchdogOptions
	timer *time.Timer

	exitOnce sync.Once
	exited   chan struct{}
	done     chan struct{} // closed when an escalation finished

	mu        sync.Mutex
	rec       Record
	triggered bool
	stopped   bool
}

// StartWatchdog arms the deadline (if any) and returns the watchdog.
func StartWatchdog(k Killer, o WatchdogOptions) *Watchdog {
	if o.KillTimeout <= 0 {
		o.KillTimeout = 10 * time.Second
	}
	if o.Grace < 0 {
		o.Grace = 0
	}
	w := &Watchdog{k: k, o: o, exited: make(chan struct{}), done: make(chan struct{})}
	if !o.Deadline.IsZero() {
		w.mu.Lock()
		w.timer = time.AfterFunc(time.Until(o.Deadline), func() { w.trigger(CauseDeadline) })
		w.mu.Unlock()
	}
	return w
}

// Cancel starts the escalation with CauseCancel. It returns false if an
// escalation already started (its cause stays) or the watchdog was stopped.
func (w *Watchdog) Cancel() bool { return w.trigger(CauseCancel) }

// Exited tells the watchdog that the worker was reaped: a running grace
// period ends without a kill. (The caller still kills and deletes the group
// during cleanup, which takes any orphans along.)
func (w *Watchdog) Exited() { w.exitOnce.Do(func() { close(w.exited) }) }

// Done is closed when a started escalation has finished.
func (w *Watchdog) Done() <-chan struct{} { return w.done }

// Stop disarms the deadline, marks the worker exited, waits for a running
// escalation to finish and returns the record. Call it after reaping.
func (w *Watchdog) Stop() Record {
	w.Exited()
	w.mu.Lock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	triggered := w.triggered
	w.mu.Unlock()
	if triggered {
		<-w.done
	}
	return w.Record()
}

// Record returns the record so far.
func (w *Watchdog) Record() Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rec
}

func (w *Watchdog) trigger(c Cause) bool {
	w.mu.Lock()
	if w.triggered || w.stopped {
		w.mu.Unlock()
		return false
	}
	w.triggered = true
	w.rec.Cause, w.rec.TriggeredAt = c, time.Now()
	at := w.rec.TriggeredAt
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	if w.o.OnTrigger != nil {
		w.o.OnTrigger(c, at)
	}
	go w.escalate()
	return true
}

func (w *Watchdog) escalate() {
	defer close(w.done)
	if w.o.Cancel != nil {
		ctx, cancel := context.WithTimeout(context.Background(), w.o.Grace)
		defer cancel()
		res := make(chan error, 1)
		// The callback runs on its own goroutine: one that ignores its
		// context must not delay the kill.
		go func() { res <- w.o.Cancel(ctx) }()
		w.mu.Lock()
		w.rec.CancelSent = true
		w.mu.Unlock()
	grace:
		for {
			select {
			case err := <-res:
				if err != nil {
					w.mu.Lock()
					w.rec.CancelError = err.Error()
					w.mu.Unlock()
				}
				res = nil
			case <-w.exited:
				w.mu.Lock()
				w.rec.ExitedInGrace = true
				w.mu.Unlock()
				return
			case <-ctx.Done():
				if res != nil {
					w.mu.Lock()
					w.rec.CancelError = "cancel callback did not return within the grace period"
					w.mu.Unlock()
				}
				break grace
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.o.KillTimeout)
	defer cancel()
	err := errNilKiller
	if w.k != nil {
		err = w.k.Kill(ctx)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rec.KilledAt = time.Now()
	if err != nil {
		w.rec.KillError = err.Error()
		return
	}
	w.rec.Killed = true
}

// errNilKiller is recorded when a watchdog was started without a killer.
var errNilKiller = errors.New("limits: watchdog without a killer")
