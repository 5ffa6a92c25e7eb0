package limits

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// Group is the set of cgroups of one attempt. Its methods are safe for
// concurrent use; Kill, Place and Delete are serialized so that a kill never
// runs while a pid is being placed.
type Group struct {
	m    *Manager
	name string
	dirs dirSet

	oomBase   uint64 // oom_kill counter when the group was created
	oomBaseOK bool

	mu      sync.Mutex
	fd      int // v2 directory, for clone3 CLONE_INTO_CGROUP; -1 if none
	deleted bool
	outcome *Outcome // taken by Delete (or Close), returned by Result afterwards
}

// Create makes the groups of attempt name with the limits of s. It fails
// with ErrUnsupportedLimit if s asks for a limit the probe did not see
// enforced, ErrCgroupsUnavailable if no cgroup can be made here,
// ErrExists if the name is taken, and ErrInvalidName / ErrInvalidSpec on bad
// input. Nothing is left behind on failure.
func (m *Manager) Create(name string, s Spec) (*Group, error) {
	if err := ValidName(name); err != nil {
		return nil, fmt.Errorf("limits: create: %w", err)
	}
	if err := m.Capabilities().Check(s, false); err != nil {
		return nil, fmt.Errorf("limits: create %s: %w", name, err)
	}
	return m.create(name, s)
}

func (m *Manager) create(name string, s Spec) (*Group, error) {
	if m.isClosed() {
		return nil, fmt.Errorf("limits: create %s: manager closed: %w", name, ErrCgroupsUnavailable)
	}
	if m.inst.empty() {
		return nil, fmt.Errorf("limits: create %s: %w (%s)", name, ErrCgroupsUnavailable, m.Capabilities().reason(ReasonCgroups))
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("limits: create %s: %w", name, err)
	}
	d := m.inst.join(name)
	if s.CPUQuotaMicros == 0 && d.cpu != d.cpuacct {
		d.cpu = "" // a separately mounted cpu hierarchy is only needed for a quota
	}
	if d.v2 != "" && !m.v2Limits && d.cpuacct != d.cpu {
		// Hybrid: cgroup2 core keeps cpu.stat (usage, user, system) for
		// every group, so a separately mounted v1 cpuacct group would only
		// repeat it, at the price of a mkdir, a placement, three reads and
		// an rmdir per attempt. (Co-mounted with cpu it stays: Update may
		// set a quota there.)
		d.cpuacct = ""
	}
	g := &Group{m: m, name: name, dirs: d, fd: -1}
	var made []string
	fail := func(err error) (*Group, error) {
		for i := len(made) - 1; i >= 0; i-- {
			_ = rmdirHandled(made[i])
		}
		return nil, err
	}
	for _, dir := range d.all() {
		if err := mkdirHandled(dir); err != nil {
			if errors.Is(err, unix.EEXIST) {
				return fail(fmt.Errorf("limits: create %s: %w", dir, ErrExists))
			}
			return fail(fmt.Errorf("limits: create %s: %w", dir, err))
		}
		made = append(made, dir)
	}
	if err := m.writeLimits(d, s); err != nil {
		return fail(err)
	}
	if v, err := g.oomKills(); err == nil {
		g.oomBase, g.oomBaseOK = v, true
	}
	if d.v2 != "" {
		fd, err := openRetry(d.v2, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
		if err != nil {
			return fail(fmt.Errorf("limits: open %s: %w", d.v2, err))
		}
		g.fd = fd
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		g.release()
		_ = removeTreeAll(made)
		return nil, fmt.Errorf("limits: create %s: manager closed: %w", name, ErrCgroupsUnavailable)
	}
	m.groups[g] = struct{}{}
	m.mu.Unlock()
	return g, nil
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// release closes the fd and forgets the group. Callers hold g.mu.
func (g *Group) release() {
	if g.fd >= 0 {
		_ = unix.Close(g.fd)
		g.fd = -1
	}
	g.deleted = true
	g.m.mu.Lock()
	delete(g.m.groups, g)
	g.m.mu.Unlock()
}

func (m *Manager) writeLimits(d dirSet, s Spec) error {
	apply := func(dir, what string, sets []setting) error {
		if len(sets) == 0 {
			return nil
		}
		if dir == "" {
			return fmt.Errorf("limits: %s limit: no %s hierarchy: %w", what, what, ErrUnsupportedLimit)
		}
		for _, st := range sets {
			if err := writeFile(dir, st.file, st.value); err != nil {
				return err
			}
		}
		return nil
	}
	if m.v2Limits {
		if (s.MemoryBytes > 0 && !m.v2Memory) || (s.Pids > 0 && !m.v2Pids) || (s.CPUQuotaMicros > 0 && !m.v2CPU) {
			return fmt.Errorf("limits: controller not enabled for %s: %w", d.v2, ErrUnsupportedLimit)
		}
		return apply(d.v2, "cgroup2", v2Settings(s, m.v2Memory, m.v2Swap))
	}
	mem, pids, cpu := v1Settings(s, m.memsw)
	if err := apply(d.memory, ctlMemory, mem); err != nil {
		return err
	}
	if err := apply(d.pids, ctlPids, pids); err != nil {
		return err
	}
	return apply(d.cpu, ctlCPU, cpu)
}

// Name returns the attempt name the group was created with.
func (g *Group) Name() string { return g.name }

// Dirs returns every directory of the group (v2 first).
func (g *Group) Dirs() []string { return g.dirs.all() }

// CgroupFD returns the v2 directory fd for SysProcAttr{UseCgroupFD: true,
// CgroupFD: fd}: the kernel then starts the child inside the group (clone3
// CLONE_INTO_CGROUP), so it can never run outside it. ok is false when there
// is no v2 group (pure v1 host) or the group was deleted. The fd stays owned
// by the Group and is closed by Delete; do not use it after Delete.
func (g *Group) CgroupFD() (fd int, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted || g.fd < 0 {
		return -1, false
	}
	return g.fd, true
}

// Place moves pid into every group of the attempt (the v1 limit groups and,
// harmlessly if it is already there, the v2 group). Call it only while the
// process is gated and has not yet run untrusted code: a process that runs
// before being placed can fork children that escape (15–24 % of children
// did in the host probe). On pure v2, CgroupFD placement makes this a no-op.
func (g *Group) Place(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("limits: place pid %d in %s: invalid pid", pid, g.name)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return fmt.Errorf("limits: place pid %d in %s: %w", pid, g.name, ErrDeleted)
	}
	for _, dir := range g.dirs.all() {
		if err := addProc(dir, pid); err != nil {
			return fmt.Errorf("limits: place pid %d: %w", pid, err)
		}
	}
	return nil
}

// Pids returns every process in the attempt's groups (all hierarchies,
// including any sub-groups), sorted. A deleted group has none.
func (g *Group) Pids() ([]int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil, nil
	}
	return pidsOf(g.dirs.all())
}

func pidsOf(dirs []string) ([]int, error) {
	seen := map[int]bool{}
	var errs []error
	for _, d := range dirs {
		ps, err := procsRecursive(d)
		if err != nil {
			errs = append(errs, err)
		}
		for _, p := range ps {
			seen[p] = true
		}
	}
	out := make([]int, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Ints(out)
	return out, errors.Join(errs...)
}

// Kill kills every process of the attempt, however it was forked, and
// waits until the groups are empty. It is idempotent: killing an empty or
// already deleted group (ENOENT included) succeeds at once. The wait is
// bounded by ctx (30 s if ctx has no deadline); if the group is still
// populated then, the error wraps ErrKillIncomplete.
func (g *Group) Kill(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil
	}
	_, err := g.m.killTarget(g.dirs).kill(ctx)
	if err != nil {
		return fmt.Errorf("limits: kill %s: %w", g.name, err)
	}
	return nil
}

// Delete removes the attempt's groups. It refuses (ErrNotEmpty) while
// processes remain: Kill first. Zombies that are not reaped yet do not
// block it. It takes a last Result first, which Result returns after
// Delete. Delete is idempotent.
func (g *Group) Delete() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil
	}
	if err := g.checkEmpty(); err != nil {
		return fmt.Errorf("limits: delete %s: %w", g.name, err)
	}
	// The final statistics, so that a waiter that reads Result after a
	// concurrent cleanup deleted the group still learns about an OOM kill.
	if o, err := g.result(); err == nil {
		g.outcome = &o
	}
	var errs []error
	// Deepest hierarchy entries first; v2 last so the group stays tracked
	// until everything else is gone.
	dirs := g.dirs.all()
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := removeTree(dirs[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("limits: delete %s: %w", g.name, err)
	}
	g.release()
	return nil
}

// checkEmpty refuses a group that still has processes, before any of its
// directories is removed (a half-deleted group would leave a live process
// without its memory limit). With a v2 group one read of its
// cgroup.events answers for every hierarchy (see killTarget.kill); the
// pids are listed only for the error.
func (g *Group) checkEmpty() error {
	if v2 := g.dirs.v2; v2 != "" {
		populated, err := readPopulated(v2)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return err
		case !populated:
			return nil
		}
	}
	pids, err := pidsOf(g.dirs.all())
	if err != nil {
		return err
	}
	if len(pids) > 0 {
		return fmt.Errorf("%w (pids %v)", ErrNotEmpty, pids)
	}
	return nil
}

// Update writes new limits to a live group: the launcher uses it to bind a
// pre-started worker's group to an attempt's limits before any job data
// reaches the worker. Limits can only be those Create could set for this
// group (a CPU quota needs a group created with one on hosts where cpu and
// cpuacct are separate hierarchies); lowering the memory limit below what
// the group already uses fails rather than killing the worker.
func (g *Group) Update(s Spec) error {
	if err := g.m.Capabilities().Check(s, false); err != nil {
		return fmt.Errorf("limits: update %s: %w", g.name, err)
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("limits: update %s: %w", g.name, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return fmt.Errorf("limits: update %s: %w", g.name, ErrDeleted)
	}
	return g.m.writeLimits(g.dirs, s)
}
