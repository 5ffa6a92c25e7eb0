package limits_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/limits/limitstest"
)

func benchManager(b *testing.B) *limits.Manager {
	b.Helper()
	limitstest.RequireRoot(b)
	m := limitstest.NewManager(b, limits.Options{})
	limitstest.RequireIsolation(b, m.Capabilities().CgroupCreate, "cannot create cgroups")
	return m
}

// Create+Delete of an attempt's groups with all three limits, through the
// raw cgroupfs path this package uses (v1 memory+memsw, pids, cpu quota,
// cpuacct, and the v2 tracking group with its fd on this host).
func BenchmarkCreateDelete(b *testing.B) {
	m := benchManager(b)
	s := limits.Spec{MemoryBytes: 256 << 20, Pids: 64, CPUQuotaMicros: 50_000}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		g, err := m.Create("bench-"+strconv.Itoa(i), s)
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Delete(); err != nil {
			b.Fatal(err)
		}
	}
}

// The same without limits: the directories and the fd only.
func BenchmarkCreateDeleteNoLimits(b *testing.B) {
	m := benchManager(b)
	for i := 0; b.Loop(); i++ {
		g, err := m.Create("bench-"+strconv.Itoa(i), limits.Spec{})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Delete(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKillTree20(b *testing.B)        { benchKillTree(b, false) }
func BenchmarkKillTree20Freezer(b *testing.B) { benchKillTree(b, true) }

// benchKillTree times Kill of a group holding a 20-process tree, until the
// group is empty. Building the tree is not timed.
func benchKillTree(b *testing.B, freezer bool) {
	m := benchManager(b)
	if freezer {
		limitstest.RequireIsolation(b, limits.ForceFreezer(m) == nil, "no v1 freezer")
	}
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		g, err := m.Create("tree-"+strconv.Itoa(i), limits.Spec{Pids: 256})
		if err != nil {
			b.Fatal(err)
		}
		h := startHelper(b, g, "tree", "20")
		if l := h.line(b); l != "ready" {
			b.Fatalf("tree: %q", l)
		}
		pids, _ := g.Pids()
		if len(pids) != 20 {
			b.Fatalf("tree has %d processes", len(pids))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		b.StartTimer()
		err = g.Kill(ctx)
		b.StopTimer()
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		<-h.done
		limitstest.AssertGone(b, pids...) // reaps the orphans
		if err := g.Delete(); err != nil {
			b.Fatal(err)
		}
	}
}

// The whole probe, past the process-wide cache: what a start without a
// host cache pays (it starts children to see an OOM kill, a refused fork,
// a tree kill and new namespaces). docs/limits.md has the figures.
func BenchmarkProbeUncached(b *testing.B) {
	m := benchManager(b)
	for b.Loop() {
		limits.ProbeUncached(m)
	}
}
