package limits

import (
	"context"
	"errors"
	"testing"
)

// A host without cgroups must say so, with reasons, and still accept specs
// without hard limits.
func TestNoCgroupsIsHonest(t *testing.T) {
	o, err := Options{Name: "cstest-none"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(o, &layout{mode: ModeNone})
	m.start()
	c := m.Capabilities()
	if c.CgroupMode != ModeNone || c.CgroupCreate || c.MemoryLimit || c.OOMDetection || c.PidsLimit || c.CPUQuota || c.TreeKill || c.CgroupFD {
		t.Fatalf("claims cgroup capabilities without cgroups: %+v", c)
	}
	for _, k := range []string{ReasonCgroups, ReasonMemory, ReasonOOM, ReasonPids, ReasonCPU, ReasonTreeKill, ReasonCgroupFD} {
		if c.Reasons[k] == "" {
			t.Errorf("no reason for %s", k)
		}
	}
	if c.WallClock && c.Reasons[ReasonWallClock] == "" {
		t.Error("wall clock via PID namespace only must say so")
	}
	if err := c.Check(Spec{}, false); err != nil {
		t.Errorf("a job without hard limits must still run: %v", err)
	}
	if err := c.Check(Spec{MemoryBytes: 64 << 20}, false); !errors.Is(err, ErrUnsupportedLimit) {
		t.Errorf("memory: %v", err)
	}
	if _, err := m.Create("job", Spec{}); !errors.Is(err, ErrCgroupsUnavailable) {
		t.Errorf("create: %v", err)
	}
	if _, err := m.Create("job", Spec{Pids: 3}); !errors.Is(err, ErrUnsupportedLimit) {
		t.Errorf("create with a limit: %v", err)
	}
	if got, err := m.RemoveLeftovers(context.Background()); err != nil || len(got) != 0 {
		t.Errorf("leftovers: %v %v", got, err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Errorf("close: %v", err)
	}
}
