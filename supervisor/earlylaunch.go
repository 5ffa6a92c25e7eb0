package supervisor

import (
	"context"
	"log/slog"
	"runtime"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// earlyLauncher is a one-shot supervisor's launcher, made while its store
// opens: the launcher depends on nothing in the store (its cgroups, the
// host cache and the worker's namespaces are the host's), and making it
// takes about as long as the store's open and check. Its worker starts as
// soon as both the launcher and the store's lock are had: what earlier
// boots left (cgroups, sockets) is swept first, which only the lock's
// holder may do, and the rest of the store's open (its pages checked, the
// file mapped) then overlaps the worker's start. A launcher made while
// another process held the lock may have been swept by it as an earlier
// boot's: one that failed or lost its cgroups is made again under the
// lock. A store that then fails to open closes the launcher, and with it
// that worker, which was never given a job.
type earlyLauncher struct {
	locked chan struct{} // closed by the store once its lock is held
	// settled is closed once the store's open has returned, whether or
	// not it opened.
	settled chan struct{}
	done    chan struct{} // closed once made and, under the lock, started
	l       Launcher
	err     error
	// leftovers is how many leftovers the sweep removed.
	leftovers int
}

// startLauncher makes cfg's launcher in the background when Open makes it
// and the supervisor is one-shot; otherwise it returns nil, and wait
// makes it then.
func startLauncher(ctx context.Context, cfg Config, made bool) *earlyLauncher {
	if !made || !cfg.OneShot {
		return nil
	}
	e := &earlyLauncher{locked: make(chan struct{}), settled: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.l, e.err = cfg.NewLauncher(ctx)
		select {
		case <-e.locked:
		case <-e.settled:
		}
		// The lock is had before the store's open returns, so by now it
		// is either had or never will be.
		select {
		case <-e.locked:
		default:
			return
		}
		if protocol.CodeOf(e.err) == protocol.CodeDeadlineExceeded {
			// The worker did not describe itself in time: its fault,
			// not the cgroups', and its time is up.
			return
		}
		if e.err != nil || !intact(e.l) {
			// Made before the lock: the holder before us (another
			// one-shot run) swept its cgroups as an earlier boot's, or
			// removed the parent while they were made. Under the lock
			// nobody else sweeps: made again, it stays whole.
			if e.err == nil {
				cfg.Logger.Debug("launcher made before the store's lock lost its cgroups; making it again")
				e.l.Close()
			}
			if e.l, e.err = cfg.NewLauncher(ctx); e.err != nil {
				return
			}
		}
		e.leftovers = sweepLeftovers(ctx, e.l, cfg.Logger)
		prewarm(e.l)
	}()
	// The launcher is the one-shot run's critical path (the worker starts
	// when it is made), the store's open is not: a new goroutine waits in
	// this P's next slot until an idle P steals it, which took ~0.5 ms
	// while the other core made the worker's network namespace. Yield, so
	// that the launcher starts now and the caller's open waits instead.
	runtime.Gosched()
	return e
}

// onLocked is the store's lock callback (store.Options.Locked): nil
// without an early launcher.
func (e *earlyLauncher) onLocked() func() {
	if e == nil {
		return nil
	}
	var once sync.Once
	return func() { once.Do(func() { close(e.locked) }) }
}

// wait returns the launcher once made and its worker started (making it
// now without an early one), and how many leftovers the early sweep
// removed. The store is open: its lock was had.
func (e *earlyLauncher) wait(ctx context.Context, cfg Config) (Launcher, int, error) {
	if e == nil {
		l, err := cfg.NewLauncher(ctx)
		return l, 0, err
	}
	close(e.settled)
	<-e.done
	return e.l, e.leftovers, e.err
}

// discard closes the launcher made early, once made, when the store did
// not open: nothing of it outlives Open.
func (e *earlyLauncher) discard() {
	if e == nil {
		return
	}
	close(e.settled)
	<-e.done
	if e.err == nil {
		e.l.Close()
	}
}

// sweepLeftovers removes what earlier boots' workers left, logging each.
func sweepLeftovers(ctx context.Context, l Launcher, log *slog.Logger) int {
	left, err := l.RemoveLeftovers(ctx)
	if err != nil {
		log.Warn("remove leftover workers", "err", err)
	}
	for _, what := range left {
		log.Debug("recovery: removed", "what", what)
	}
	return len(left)
}

// intact reports whether l still has everything it made on the host
// (its cgroups), when it can tell.
func intact(l Launcher) bool {
	i, ok := l.(interface{ Intact() bool })
	return !ok || i.Intact()
}

// prewarm asks l to start its warm workers now, when it keeps any.
func prewarm(l Launcher) {
	if p, ok := l.(interface{ Prewarm() }); ok {
		p.Prewarm()
	}
}
