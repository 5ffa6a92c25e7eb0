package limits

import (
	"testing"
)

// mapCache is a ProbeCache in memory, counting what it is asked.
type mapCache struct {
	m             map[string]Capabilities
	loads, stores int
	lastStoredKey string
	forceMode     string
}

func (c *mapCache) Load(key string) (Capabilities, bool) {
	c.loads++
	v, ok := c.m[key]
	if ok && c.forceMode != "" {
		v.CgroupMode = c.forceMode
	}
	return v, ok
}

func (c *mapCache) Store(key string, v Capabilities) {
	c.stores++
	c.lastStoredKey = key
	c.m[key] = v
}

func forgetProbes() {
	probeCache.mu.Lock()
	probeCache.m = map[string]Capabilities{}
	probeCache.mu.Unlock()
}

// A probe result is stored in the options' cache and, in a later process
// (the in-process cache forgotten), taken from there instead of probing;
// a stored result for another cgroup mode is not taken.
func TestProbeCache(t *testing.T) {
	cache := &mapCache{m: map[string]Capabilities{}}
	start := func() Capabilities {
		o, err := Options{Name: "cstest-cache", ProbeCache: cache}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		m := newManager(o, &layout{mode: ModeNone})
		m.start()
		return m.Capabilities()
	}
	forgetProbes()
	first := start()
	if first.ProbeCached || cache.stores != 1 || cache.lastStoredKey == "" {
		t.Fatalf("first start: cached %v, %d stores", first.ProbeCached, cache.stores)
	}
	forgetProbes()
	second := start()
	if !second.ProbeCached || cache.stores != 1 {
		t.Fatalf("second start: cached %v, %d stores", second.ProbeCached, cache.stores)
	}
	second.ProbeCached, second.ProbeMicros, first.ProbeMicros = false, 0, 0
	if second.CgroupMode != first.CgroupMode || second.Namespaces != first.Namespaces || second.Seccomp != first.Seccomp ||
		second.Landlock != first.Landlock || len(second.Reasons) != len(first.Reasons) {
		t.Fatalf("the cached result differs:\n%+v\n%+v", second, first)
	}
	forgetProbes()
	cache.forceMode = ModeV2
	if third := start(); third.ProbeCached || cache.stores != 2 {
		t.Fatalf("a result of another cgroup mode was taken: cached %v, %d stores", third.ProbeCached, cache.stores)
	}
}
