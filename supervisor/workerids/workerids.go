// Package workerids hands out the host identities that isolated workers
// run as: one uid (and the gid of the same number) per live worker, from a
// range that no user of the host has, like the per-container ranges of
// systemd-nspawn or the per-sandbox users of nsjail. Inside its user
// namespace each worker is uid 0 without capabilities; on the host it is
// an unprivileged uid that owns nothing but its own tmpfs and socket dir,
// and that no other live worker shares.
package workerids

import (
	"errors"
	"fmt"
	"sync"
)

// Range is Count consecutive ids starting at First.
type Range struct {
	First, Count uint32
}

// DefaultRange is 65,536 ids from 1,879,048,192 (0x70000000): the start
// of what systemd's UID/GID documentation lists as unused by it
// (1879048192–2147483647, between the container and the signed-overflow
// ranges), so neither a system account, a regular user, a DynamicUser of
// systemd nor an nspawn container range has it.
var DefaultRange = Range{First: 0x70000000, Count: 1 << 16}

// ErrExhausted: every id of the range belongs to a live worker.
var ErrExhausted = errors.New("workerids: every worker id is in use")

// Validate refuses an empty range, one that wraps, or one that reaches
// root, nobody (65534) or the invalid id 2^32-1.
func (r Range) Validate() error {
	last := uint64(r.First) + uint64(r.Count) - 1
	switch {
	case r.Count == 0:
		return fmt.Errorf("workerids: empty range")
	case r.First == 0:
		return fmt.Errorf("workerids: range %d+%d includes root", r.First, r.Count)
	case last >= 1<<32-1:
		return fmt.Errorf("workerids: range %d+%d reaches 4294967295", r.First, r.Count)
	case uint64(r.First) <= 65534 && last >= 65534:
		return fmt.Errorf("workerids: range %d+%d includes nobody (65534)", r.First, r.Count)
	}
	return nil
}

// Pool allocates ids of a range round robin, so that an id is reused as
// late as possible.
type Pool struct {
	r    Range
	mu   sync.Mutex
	used map[uint32]bool
	next uint32 // offset of the next id to try
}

// New returns a pool over r (validated).
func New(r Range) (*Pool, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &Pool{r: r, used: map[uint32]bool{}}, nil
}

// Range is the pool's range.
func (p *Pool) Range() Range { return p.r }

// Take returns an id no live worker has.
func (p *Pool) Take() (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if uint64(len(p.used)) >= uint64(p.r.Count) {
		return 0, ErrExhausted
	}
	for {
		id := p.r.First + p.next
		p.next = (p.next + 1) % p.r.Count
		if !p.used[id] {
			p.used[id] = true
			return id, nil
		}
	}
}

// Release gives id back once nothing of its worker is left: no process,
// no file it owns.
func (p *Pool) Release(id uint32) {
	p.mu.Lock()
	delete(p.used, id)
	p.mu.Unlock()
}

// InUse is the number of ids taken (for tests and metrics).
func (p *Pool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.used)
}
