package supervisor

import (
	"errors"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
)

// attemptSandbox is an attempt's sandbox on the host's disk
// (<home>/sandboxes/<job>/<n>). An unisolated worker works in it, so it
// is made before the launch. A jailed worker works in a tmpfs of its own
// and the sandbox only receives its certificate, which the supervisor
// writes there from the worker's stream as it comes (artifactStream): it
// is made when a prove job is given to the worker, and an attempt that
// keeps nothing (every execute job) costs no directory, no sync of one
// and no removal.
type attemptSandbox struct {
	s   *Supervisor
	job string
	n   uint32
	dir *artifacts.Dir // nil until made
}

func (s *Supervisor) newAttemptSandbox(a *active) *attemptSandbox {
	return &attemptSandbox{s: s, job: a.job.ID, n: a.n}
}

// open makes the sandbox, once.
func (b *attemptSandbox) open() (*artifacts.Dir, error) {
	if b == nil {
		return nil, errors.New("the attempt has no sandbox")
	}
	if b.dir == nil {
		d, err := b.s.sandboxes.Create(b.job, b.n)
		if err != nil {
			return nil, err
		}
		b.dir = d
	}
	return b.dir, nil
}

// is reports whether d is this sandbox (an unisolated worker's work dir).
func (b *attemptSandbox) is(d *artifacts.Dir) bool { return b != nil && b.dir != nil && b.dir == d }

// close releases the sandbox's descriptor; what it holds stays.
func (b *attemptSandbox) close() {
	if b.dir != nil {
		b.dir.Close()
	}
}

// discard removes the sandbox and what it holds, if it was made.
func (b *attemptSandbox) discard() {
	if b.dir == nil {
		return
	}
	if err := b.dir.Remove(); err != nil && !errors.Is(err, artifacts.ErrNotFound) {
		b.s.log.Warn("remove sandbox", "dir", b.dir.Path(), "err", err)
	}
}
