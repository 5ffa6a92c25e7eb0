package limits

import "github.com/cyberia-to/cyber-supervisor/internal/prepared"

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

var preparedLayout prepared.Value[layoutResult]

// PrepareLayout starts reading the cgroup layout in the background, once;
// the next NewManager takes what it read instead of reading it itself.
func PrepareLayout() {
	preparedLayout.Start(func() layoutResult {
		l, err := discoverLayout()
		return layoutResult{l, err}
	})
}

// takeLayout returns the layout PrepareLayout read (waiting for it), or
// reads it now.
func takeLayout() (*layout, error) {
	if r, ok := preparedLayout.Take(); ok {
		return r.l, r.err
	}
	return discoverLayout()
}
