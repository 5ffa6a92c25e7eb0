// Package workerids hands out the host identities that isolated workers
// run as: one uid (and the gid of the same number) per live worker, from a
// range that no user of the host has, like the per-container ranges of
// systemd-nspawn or the per-sandbox users of nsjail. A worker is that
// unprivileged uid on the host and in its jail, without capabilities; it
// owns nothing but its own tmpfs and socket dir, and no other live worker
// of the host shares it, whichever supervisor started that one (see
// NewShared).
package workerids

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
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
// late as possible. Every id it hands out is also leased host-wide (see
// NewShared): two supervisors of one host never give one id to two live
// workers at once.
type Pool struct {
	r     Range
	lease *os.File // nil: ids are exclusive within this process only
	mu    sync.Mutex
	used  map[uint32]bool
	next  uint32 // offset of the next id to try
}

// DefaultLeaseFile is the host-wide file in which supervisors lease
// worker ids: byte id of the file is write-locked while a worker of the
// locking supervisor has that id. /run is per boot and root's, as the ids
// are.
const DefaultLeaseFile = "/run/cyber-supervisor/worker-ids.lock"

// New returns a pool over r (validated) that leases its ids in
// DefaultLeaseFile.
func New(r Range) (*Pool, error) { return NewShared(r, DefaultLeaseFile) }

// NewShared returns a pool over r (validated) that leases each id it
// hands out in file (made, with its directory, when missing): an open file
// description lock (F_OFD_SETLK) on byte id, taken without waiting, so an
// id another supervisor's worker has is skipped. The kernel drops the
// locks of a process that ends, however it ends, so a crashed
// supervisor's ids come back by themselves; the file itself never
// changes. file "" makes the ids exclusive within this process only.
func NewShared(r Range, file string) (*Pool, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	p := &Pool{r: r, used: map[uint32]bool{}}
	if file == "" {
		return p, nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return nil, fmt.Errorf("workerids: lease directory: %w", err)
	}
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("workerids: lease file: %w", err)
	}
	p.lease = f
	return p, nil
}

// Range is the pool's range.
func (p *Pool) Range() Range { return p.r }

// Take returns an id no live worker of this host has.
func (p *Pool) Take() (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if uint64(len(p.used)) >= uint64(p.r.Count) {
		return 0, ErrExhausted
	}
	for range p.r.Count {
		id := p.r.First + p.next
		p.next = (p.next + 1) % p.r.Count
		if p.used[id] {
			continue
		}
		leased, err := p.setLease(id, unix.F_WRLCK)
		if err != nil {
			return 0, err
		}
		if !leased {
			continue // another supervisor's worker has it
		}
		p.used[id] = true
		return id, nil
	}
	return 0, ErrExhausted
}

// setLease locks (F_WRLCK) or unlocks (F_UNLCK) byte id of the lease
// file; leased is false when another open file description holds it.
func (p *Pool) setLease(id uint32, typ int16) (leased bool, err error) {
	if p.lease == nil {
		return true, nil
	}
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: int64(id), Len: 1}
	err = unix.FcntlFlock(p.lease.Fd(), unix.F_OFD_SETLK, &lk)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("workerids: lease of id %d in %s: %w", id, p.lease.Name(), err)
	}
	return true, nil
}

// Close drops every lease of the pool (the ids of workers still alive
// included: call it once none is).
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used = map[uint32]bool{}
	if p.lease == nil {
		return nil
	}
	err := p.lease.Close()
	p.lease = nil
	return err
}

// Release gives id back once nothing of its worker is left: no process,
// no file it owns.
func (p *Pool) Release(id uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.used[id] {
		return
	}
	delete(p.used, id)
	// An unlock fails only on a bad descriptor; the lease then went with it.
	_, _ = p.setLease(id, unix.F_UNLCK)
}

// InUse is the number of ids taken (for tests and metrics).
func (p *Pool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.used)
}
