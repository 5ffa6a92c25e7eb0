package limits

import (
	"errors"
	"fmt"
	"path/filepath"
)

// Placing a process into v1 groups after it is forked (Place) is a
// migration, and the kernel write-locks cgroup_threadgroup_rwsem, a
// per-CPU rwsem, for every migration of a pid: the first one after a
// quiet spell waits for an RCU grace period, 1 ms on an idle host and
// 6-12 ms on a loaded 2-core one (measured), while holding cgroup_mutex
// (every cgroup mkdir and CLONE_INTO_CGROUP fork waits too). A thread
// that moves itself (writes 0 to a v1 group's tasks file) is migrated
// without that lock: it cannot exit or exec under the kernel's hands.
// So the thread that forks a worker moves itself into the worker's v1
// groups, forks (the child is born in them, as in its v2 group through
// CLONE_INTO_CGROUP), and moves back: nothing is left for Place, and no
// grace period is waited for. (The isolation probe's §3 measured this
// "thread trick" race-free: 0 of 200 children outside their groups.)

// ErrThreadPlacement: the groups cannot take the forking thread; place
// the process with Place instead.
var ErrThreadPlacement = errors.New("limits: thread placement not possible")

// EnterThread moves the calling OS thread, which must stay locked to its
// goroutine (runtime.LockOSThread) until leave returns, into the group's
// v1 groups, so that a process it forks with CgroupFD (when ok) is born
// in every group of the attempt; leave moves the thread back to this
// process's own groups and must be called on the same thread right after
// the fork. It refuses (ErrThreadPlacement, nothing moved) when a fork
// from the thread would miss a group: a v2 group without its fd; or when
// the thread could be hit by the group's kill: a v1 freezer group (its
// freeze and sweep would reach the supervisor). The caller then places
// the process with Place. Any other error means the thread may be left
// in a group of the attempt: it must fork nothing more, and be kept
// (a child's Pdeathsig fires when its forking thread exits).
//
// While the thread is inside, the group's
// cgroup.procs lists the supervisor: launch and kill of one group must
// not overlap (sandbox forks before it lets a kill in; Kill never
// signals or freezes the supervisor either).
func (g *Group) EnterThread() (leave func() error, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil, fmt.Errorf("%w: %s: %w", ErrThreadPlacement, g.name, ErrDeleted)
	}
	if g.dirs.v2 != "" && g.fd < 0 {
		return nil, fmt.Errorf("%w: %s has no v2 descriptor", ErrThreadPlacement, g.name)
	}
	if g.dirs.freezer != "" {
		return nil, fmt.Errorf("%w: %s is killed through the v1 freezer", ErrThreadPlacement, g.name)
	}
	type move struct{ into, home string }
	var moves []move
	for _, h := range []struct {
		dir, ctl string
	}{{g.dirs.memory, ctlMemory}, {g.dirs.pids, ctlPids}, {g.dirs.cpu, ctlCPU}, {g.dirs.cpuacct, ctlCPUAcct}} {
		if h.dir == "" || (h.ctl == ctlCPUAcct && h.dir == g.dirs.cpu) {
			continue // unused, or co-mounted with cpu
		}
		own := g.m.lay.v1[h.ctl]
		if own == nil || !own.exact {
			return nil, fmt.Errorf("%w: this process's own %s group is not known exactly", ErrThreadPlacement, h.ctl)
		}
		moves = append(moves, move{into: h.dir, home: filepath.Join(own.mount, own.own)})
	}
	back := func(ms []move) error {
		var errs []error
		for _, m := range ms {
			if err := writeFile(m.home, "tasks", "0"); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("limits: move the launching thread back from %s: %w", g.name, err)
		}
		return nil
	}
	for i, m := range moves {
		if err := writeFile(m.into, "tasks", "0"); err != nil {
			if berr := back(moves[:i]); berr != nil {
				return nil, errors.Join(fmt.Errorf("limits: thread into %s: %w", m.into, err), berr)
			}
			return nil, fmt.Errorf("%w: %v", ErrThreadPlacement, err)
		}
	}
	return func() error { return back(moves) }, nil
}
