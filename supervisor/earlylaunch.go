package supervisor

import "context"

// earlyLauncher is a one-shot supervisor's launcher, made while its store
// opens: the launcher depends on nothing in the store (its cgroups, the
// host cache and the worker's namespaces are the host's), and making it
// takes about as long as the store's open and check. It starts no worker:
// that waits for the store's lock (Open).
type earlyLauncher struct {
	done chan struct{}
	l    Launcher
	err  error
}

// startLauncher makes cfg's launcher in the background when Open makes it
// and the supervisor is one-shot; otherwise it returns nil, and wait
// makes it then.
func startLauncher(ctx context.Context, cfg Config, made bool) *earlyLauncher {
	if !made || !cfg.OneShot {
		return nil
	}
	e := &earlyLauncher{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.l, e.err = cfg.NewLauncher(ctx)
	}()
	return e
}

// wait returns the launcher (making it now without an early one).
func (e *earlyLauncher) wait(ctx context.Context, cfg Config) (Launcher, error) {
	if e == nil {
		return cfg.NewLauncher(ctx)
	}
	<-e.done
	return e.l, e.err
}

// discard closes the launcher made early, once made, when the store did
// not open: nothing of it outlives Open.
func (e *earlyLauncher) discard() {
	if e == nil {
		return
	}
	<-e.done
	if e.err == nil {
		e.l.Close()
	}
}
