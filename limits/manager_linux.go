package limits

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Manager owns the cgroups of one supervisor process: the parent group
// <Name>/<Instance> in every hierarchy it uses, and the groups of the
// attempts below it. Create one per supervisor process with NewManager.
// All methods are safe for concurrent use.
type Manager struct {
	opts Options
	lay  *layout

	parent dirSet // <base>/<Name>
	inst   dirSet // <base>/<Name>/<Instance>

	v2Limits   bool // pure v2: limits live in the v2 group
	v2Memory   bool // pure v2: memory controller enabled for our groups
	v2Pids     bool
	v2CPU      bool
	v2Swap     bool // pure v2: memory.swap.max exists
	memsw      bool // v1: memory.memsw.* exists (swap accounting on)
	cgroupKill bool // the v2 groups have cgroup.kill
	useFreezer bool // v1 freezer groups are created (no cgroup.kill)

	// vanished: a directory setup made, or the parent it made it in,
	// disappeared under it (another supervisor's sweep or close on the
	// same parent); see Intact.
	vanished bool

	mu     sync.Mutex
	caps   Capabilities
	closed bool
	groups map[*Group]struct{} // live groups, released by Close
}

// NewManager discovers the cgroup layout, creates the parent group of this
// instance in every usable hierarchy and probes what is enforced. It fails
// only on invalid options: a host without usable cgroups yields a Manager
// whose Capabilities say so and whose Create returns ErrCgroupsUnavailable.
func NewManager(opts Options) (*Manager, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	lay, lerr := discoverLayout()
	if lerr != nil {
		lay = &layout{mode: ModeNone}
	}
	m := newManager(o, lay)
	if lerr != nil {
		m.caps.setReason(ReasonCgroups, "%v", lerr)
	}
	m.start()
	return m, nil
}

func newManager(o Options, lay *layout) *Manager {
	m := &Manager{opts: o, lay: lay, groups: map[*Group]struct{}{}}
	m.caps.CgroupMode = lay.mode
	return m
}

func (m *Manager) start() {
	begin := time.Now()
	m.setup()
	key := m.probeKey()
	if c, ok := probeCache.get(key); ok {
		m.caps = c
		m.caps.ProbeCached = true
	} else if c, ok := m.loadProbe(key); ok {
		m.caps = c.clone()
		m.caps.ProbeCached = true
		probeCache.put(key, m.caps)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), m.opts.ProbeTimeout)
		m.probe(ctx)
		cancel()
		// A probe whose groups were removed under it (see Intact) found
		// what a race did, not what the host enforces: it is not kept
		// for the next Manager.
		if m.Intact() {
			probeCache.put(key, m.caps)
			if m.opts.ProbeCache != nil {
				m.opts.ProbeCache.Store(key, m.caps.clone())
			}
		}
	}
	m.caps.ProbeMicros = time.Since(begin).Microseconds()
}

// probeCache keeps probe results per process. What the probe finds depends
// only on the host and on what setup could create, so a second Manager with
// the same setup (tests create many) reuses the first one's result instead
// of OOM-killing children again.
var probeCache = capsCache{m: map[string]Capabilities{}}

type capsCache struct {
	mu sync.Mutex
	m  map[string]Capabilities
}

func (c *capsCache) get(key string) (Capabilities, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v.clone(), ok
}

func (c *capsCache) put(key string, v Capabilities) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = v.clone()
}

// loadProbe asks the options' ProbeCache for a result of this setup; one
// whose cgroup mode differs from the layout found now is not taken.
func (m *Manager) loadProbe(key string) (Capabilities, bool) {
	if m.opts.ProbeCache == nil {
		return Capabilities{}, false
	}
	c, ok := m.opts.ProbeCache.Load(key)
	if !ok || c.CgroupMode != m.lay.mode {
		return Capabilities{}, false
	}
	return c, true
}

// probeKey names everything setup decided that the probe result depends on.
func (m *Manager) probeKey() string {
	has := func(p string) bool { return p != "" }
	i := m.inst
	return fmt.Sprintf("%s atroot=%v v2=%v/%v/%v/%v/%v memsw=%v kill=%v freezer=%v dirs=%v%v%v%v%v%v",
		m.lay.mode, m.opts.AtRoot, m.v2Limits, m.v2Memory, m.v2Pids, m.v2CPU, m.v2Swap, m.memsw,
		m.cgroupKill, m.useFreezer, has(i.memory), has(i.pids), has(i.cpu), has(i.cpuacct), has(i.freezer), has(i.v2))
}

// Intact reports whether this instance's groups are all still there and
// setup lost none to a removal racing with it (another process's
// RemoveLeftovers on the same parent, which takes the instance for an
// earlier boot's): a probe run in groups removed under it is not kept.
func (m *Manager) Intact() bool {
	if m.vanished {
		return false
	}
	for _, d := range m.inst.all() {
		if !exists(d) {
			return false
		}
	}
	return true
}

// Capabilities returns the cached result of the start-up probe.
func (m *Manager) Capabilities() Capabilities {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.caps.clone()
}

// Options returns the options in effect (defaults applied).
func (m *Manager) Options() Options { return m.opts }

// InstanceDirs returns this instance's parent directory in every hierarchy
// in use (for diagnostics and leak checks).
func (m *Manager) InstanceDirs() []string { return m.inst.all() }

// ParentDirs returns the <Name> directory in every hierarchy in use. It
// also covers hierarchies where this instance could not create a group, so
// that leftovers there are still visible.
func (m *Manager) ParentDirs() []string { return m.parentAll().all() }

// parentAll is the <Name> directory in every mounted hierarchy we know,
// whether or not this instance could use it. RemoveLeftovers scans it so a
// change of kill method between boots (freezer vs cgroup.kill) leaves
// nothing behind.
func (m *Manager) parentAll() dirSet {
	l, name, atRoot := m.lay, m.opts.Name, m.opts.AtRoot
	pick := func(h *hierarchy) string {
		if h == nil {
			return ""
		}
		return filepath.Join(h.base(atRoot), name)
	}
	if l.mode == ModeV2 {
		return dirSet{v2: pick(l.v2)}
	}
	return dirSet{
		memory: pick(l.v1[ctlMemory]), pids: pick(l.v1[ctlPids]), cpu: pick(l.v1[ctlCPU]),
		cpuacct: pick(l.v1[ctlCPUAcct]), freezer: pick(l.v1[ctlFreezer]), v2: pick(l.v2),
	}
}

// setup creates <Name>/<Instance> in every hierarchy needed and records,
// per hierarchy, why it is unusable.
func (m *Manager) setup() {
	if m.lay.mode == ModeNone {
		if m.caps.Reasons[ReasonCgroups] == "" {
			m.caps.setReason(ReasonCgroups, "no cgroup filesystem is mounted")
		}
		return
	}
	m.parent = m.parentAll()
	m.inst = m.parent.join(m.opts.Instance)
	if m.lay.mode == ModeV2 {
		m.v2Limits = true
	}

	var failed []string
	mk := func(p *string, what string) {
		if *p == "" {
			return
		}
		if err := os.MkdirAll(*p, 0o755); err != nil {
			m.vanished = m.vanished || errors.Is(err, fs.ErrNotExist)
			failed = append(failed, fmt.Sprintf("%s: %v", what, err))
			*p = ""
			return
		}
		handles.add(*p) // the parent of every group
	}
	// The v2 group first: whether it has cgroup.kill decides whether the
	// v1 freezer is needed at all.
	mk(&m.inst.v2, "cgroup2")
	if m.inst.v2 != "" {
		m.cgroupKill = exists(filepath.Join(m.inst.v2, "cgroup.kill"))
	}
	m.useFreezer = !m.cgroupKill
	if !m.useFreezer {
		m.inst.freezer = ""
	}
	if m.v2Limits {
		m.enableV2Controllers()
	} else {
		mk(&m.inst.memory, "memory")
		mk(&m.inst.pids, "pids")
		comounted := m.inst.cpu != "" && m.inst.cpu == m.inst.cpuacct
		mk(&m.inst.cpu, "cpu")
		switch {
		case comounted:
			m.inst.cpuacct = m.inst.cpu
		case m.inst.v2 != "":
			// Hybrid: no group uses a separately mounted cpuacct (create
			// reads cgroup2's cpu.stat instead), so neither does the
			// instance: two mkdirs and two rmdirs less per one-shot run.
			m.inst.cpuacct = ""
		default:
			mk(&m.inst.cpuacct, "cpuacct")
		}
		mk(&m.inst.freezer, "freezer")
		if m.inst.memory != "" {
			m.memsw = exists(filepath.Join(m.inst.memory, "memory.memsw.limit_in_bytes"))
		}
	}
	if m.inst.empty() {
		m.caps.setReason(ReasonCgroups, "cannot create cgroups (%s)", strings.Join(failed, "; "))
	} else if len(failed) > 0 {
		m.caps.setReason(ReasonCgroups, "some hierarchies unusable (%s)", strings.Join(failed, "; "))
	}
}
