package limits_test

import (
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/limits/limitstest"
)

// CPUUsage reads the group's CPU time while it lives (what the supervisor
// reports with a result before the teardown), the same counter Result
// reads, and after Delete the final value.
func TestCPUUsage(t *testing.T) {
	m := newManager(t)
	c := m.Capabilities()
	limitstest.RequireIsolation(t, c.CgroupCreate, "cgroups: %s", c.Reasons[limits.ReasonCgroups])
	g := newGroup(t, m, "cpu", limits.Spec{})
	start := time.Now()
	h := startHelper(t, g, "busy", "200")
	if err := h.wait(t); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	used, err := g.CPUUsage()
	if err != nil {
		t.Fatal(err)
	}
	// A spinning child uses CPU; never more than the wall time on every
	// core of the machine.
	if used <= 0 || used > 8*wall {
		t.Fatalf("cpu usage %s after %s of wall time", used, wall)
	}
	o, err := g.Result()
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(o.CPUUsageNanos) < used {
		t.Errorf("Result's cpu usage %d ns below the live read %s", o.CPUUsageNanos, used)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	final, err := g.CPUUsage()
	if err != nil || final < used {
		t.Fatalf("after delete: %s, %v (live read %s)", final, err, used)
	}
}
