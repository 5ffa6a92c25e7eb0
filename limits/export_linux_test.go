package limits

import (
	"context"
	"os"
)

// ForceFreezer makes groups created afterwards use the v1 freezer kill
// path even though cgroup.kill exists, so the fallback is tested on hosts
// that have both.
func ForceFreezer(m *Manager) error {
	m.cgroupKill, m.useFreezer = false, true
	m.inst.freezer = m.parentAll().join(m.opts.Instance).freezer
	if m.inst.freezer == "" {
		return os.ErrNotExist
	}
	return os.MkdirAll(m.inst.freezer, 0o755)
}

// KillMethod kills g like Kill and reports the method used.
func KillMethod(ctx context.Context, g *Group) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.killTarget(g.dirs).kill(ctx)
}

// ProbeUncached re-runs the probe of m, bypassing the process-wide cache.
func ProbeUncached(m *Manager) Capabilities {
	saved := m.caps
	m.caps = Capabilities{CgroupMode: m.lay.mode}
	for k, v := range saved.Reasons {
		if k == ReasonCgroups {
			m.caps.setReason(k, "%s", v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.ProbeTimeout)
	defer cancel()
	m.probe(ctx)
	c := m.caps.clone()
	m.caps = saved
	return c
}

// DirHandles is how many cgroup directory handles the process holds.
func DirHandles() int { return handles.count() }

// ForgetProbes empties the process-wide probe cache, so that the next
// Manager probes (or asks its ProbeCache) as a new process would.
func ForgetProbes() { forgetProbes() }

// count is how many directory handles are kept.
func (h *dirHandles) count() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.m)
}
