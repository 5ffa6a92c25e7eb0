package limits

import "sync"

// Reading the cgroup layout (mountinfo and /proc/self/cgroup, parsed) is
// ~0.15 ms of CPU at the start of every Manager, on a one-shot run's
// critical path: its worker cannot start before the Manager has made its
// groups. It depends on nothing but the process, so a run reads it
// before main, while the binary's packages initialise on one core and the
// other is idle (cmd/cyber-supervisor/internal/early).

type layoutResult struct {
	l   *layout
	err error
}

var prepared struct {
	mu sync.Mutex
	ch chan layoutResult // nil: none started, or taken
}

// PrepareLayout starts reading the cgroup layout in the background, once;
// the next NewManager takes what it read instead of reading it itself.
func PrepareLayout() {
	prepared.mu.Lock()
	defer prepared.mu.Unlock()
	if prepared.ch != nil {
		return
	}
	ch := make(chan layoutResult, 1)
	prepared.ch = ch
	go func() {
		l, err := discoverLayout()
		ch <- layoutResult{l, err}
	}()
}

// takeLayout returns the layout PrepareLayout read (waiting for it), or
// reads it now.
func takeLayout() (*layout, error) {
	prepared.mu.Lock()
	ch := prepared.ch
	prepared.ch = nil
	prepared.mu.Unlock()
	if ch == nil {
		return discoverLayout()
	}
	r := <-ch
	return r.l, r.err
}
