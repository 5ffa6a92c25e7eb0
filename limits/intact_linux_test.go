package limits_test

import (
	"context"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/limits/limitstest"
)

// sweepingCache misses, and before it answers lets another supervisor
// sweep: the sweep lands between the Manager's setup and its probe.
type sweepingCache struct {
	sweep  func()
	stores int
}

func (c *sweepingCache) Load(string) (limits.Capabilities, bool) {
	if c.sweep != nil {
		c.sweep()
	}
	return limits.Capabilities{}, false
}

func (c *sweepingCache) Store(string, limits.Capabilities) { c.stores++ }

// A Manager made beside a live one on the same parent (a one-shot run
// waiting for the store's lock while another holds it) loses its
// instance to the holder's RemoveLeftovers: it then says it is not
// intact, and what its probe found in the removed groups is kept
// neither in the process nor in the ProbeCache (it was the host cache's
// result for the kernel's boot, and runs refused isolation by it). The
// next Manager probes the host again and keeps that.
func TestSweptWhileProbing(t *testing.T) {
	limitstest.RequireRoot(t)
	name := limitstest.UniqueName(t)
	// The holder's leak check runs last: it is the parent's last user.
	holder := limitstest.NewManager(t, limits.Options{Name: name, Instance: "holder"})
	limitstest.RequireIsolation(t, holder.Capabilities().TreeKill, "tree kill: %s", holder.Capabilities().Reasons[limits.ReasonTreeKill])

	limits.ForgetProbes()
	cache := &sweepingCache{sweep: func() {
		if _, err := holder.RemoveLeftovers(context.Background()); err != nil {
			t.Errorf("sweep: %v", err)
		}
	}}
	swept, err := limits.NewManager(limits.Options{Name: name, Instance: "waiter", ProbeCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if swept.Intact() {
		t.Error("intact after its instance was removed")
	}
	if cache.stores != 0 {
		t.Errorf("a probe of removed groups was stored (%d), tree kill %v", cache.stores, swept.Capabilities().TreeKill)
	}
	if err := swept.Close(context.Background()); err != nil {
		t.Errorf("close: %v", err)
	}

	cache.sweep = nil
	again, err := limits.NewManager(limits.Options{Name: name, Instance: "waiter-2", ProbeCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close(context.Background())
	if c := again.Capabilities(); !again.Intact() || c.ProbeCached || !c.TreeKill || cache.stores != 1 {
		t.Errorf("next manager: intact %v, cached %v, tree kill %v, %d stores", again.Intact(), c.ProbeCached, c.TreeKill, cache.stores)
	}
	if !holder.Intact() {
		t.Error("the holder is not intact")
	}
}
