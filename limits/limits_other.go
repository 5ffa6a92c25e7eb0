//go:build !linux

package limits

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// On other systems there are no cgroups: the Manager reports so honestly
// and refuses every group, so that code using the package still builds and
// runs jobs without hard limits.

// Manager is the non-Linux stand-in; see manager_linux.go.
type Manager struct {
	opts Options
	caps Capabilities
}

// Group is never created on non-Linux systems.
type Group struct{}

// NewManager returns a Manager without any cgroup capability.
func NewManager(opts Options) (*Manager, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Manager{opts: o, caps: Capabilities{CgroupMode: ModeNone}}
	for _, k := range []string{ReasonCgroups, ReasonMemory, ReasonOOM, ReasonPids, ReasonCPU, ReasonTreeKill, ReasonCgroupFD, ReasonWallClock, ReasonNamespaces, ReasonUserNamespace, ReasonLandlock, ReasonSeccomp} {
		m.caps.setReason(k, "cgroups and namespaces are Linux-only")
	}
	return m, nil
}

func (m *Manager) Capabilities() Capabilities { return m.caps.clone() }
func (m *Manager) Options() Options           { return m.opts }
func (m *Manager) InstanceDirs() []string     { return nil }
func (m *Manager) ParentDirs() []string       { return nil }
func (m *Manager) Intact() bool               { return true }

func (m *Manager) Create(name string, s Spec) (*Group, error) {
	if err := ValidName(name); err != nil {
		return nil, fmt.Errorf("limits: create: %w", err)
	}
	if err := m.caps.Check(s, false); err != nil {
		return nil, fmt.Errorf("limits: create %s: %w", name, err)
	}
	return nil, fmt.Errorf("limits: create %s: %w", name, ErrCgroupsUnavailable)
}

func (m *Manager) RemoveLeftovers(context.Context) ([]string, error) { return nil, nil }
func (m *Manager) Close(context.Context) error                       { return nil }

func (g *Group) Name() string                { return "" }
func (g *Group) Dirs() []string              { return nil }
func (g *Group) CgroupFD() (int, bool)       { return -1, false }
func (g *Group) Place(pid int) error         { return ErrCgroupsUnavailable }
func (g *Group) Pids() ([]int, error)        { return nil, nil }
func (g *Group) Kill(context.Context) error  { return nil }
func (g *Group) Result() (Outcome, error)    { return Outcome{}, ErrCgroupsUnavailable }
func (g *Group) Delete() error               { return nil }
func (g *Group) PeakMemory() (uint64, error) { return 0, ErrCgroupsUnavailable }

func (g *Group) CPUUsage() (time.Duration, error) { return 0, ErrCgroupsUnavailable }

// ErrThreadPlacement: no thread placement without cgroups.
var ErrThreadPlacement = errors.New("limits: thread placement not possible")

// EnterThread is refused without cgroups.
func (g *Group) EnterThread() (func() error, error) { return nil, ErrThreadPlacement }
