package launch

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/limits"
)

// The host cache holds for these binaries: a later open finds what an
// earlier one stored; a binary touched but unchanged (its digest is
// recomputed) keeps it; a rebuilt binary, or a damaged file, loses it.
func TestHostCache(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	bins := map[string]string{}
	for _, role := range []string{"supervisor", "worker", "gate"} {
		p := filepath.Join(dir, role)
		if err := os.WriteFile(p, []byte("binary of "+role), 0o755); err != nil {
			t.Fatal(err)
		}
		bins[role] = p
	}
	log := slog.New(slog.DiscardHandler)
	probe := limits.Capabilities{CgroupMode: limits.ModeHybrid, MemoryLimit: true, Reasons: map[string]string{"x": "y"}}

	c := openHostCache(home, bins, log)
	if _, ok := c.Load("k"); ok {
		t.Fatal("a new cache has a probe")
	}
	c.Store("k", probe)
	c.putWorker("w", allCaps())
	c.save()
	if st, err := os.Stat(filepath.Join(home, HostCacheFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("cache file: %v %v", st, err)
	}

	hit := func(what string, want bool) {
		t.Helper()
		c := openHostCache(home, bins, log)
		got, ok := c.Load("k")
		_, wok := c.worker("w")
		if ok != want || wok != want || (ok && (got.CgroupMode != limits.ModeHybrid || !got.MemoryLimit || got.Reasons["x"] != "y")) {
			t.Fatalf("%s: probe %v %+v, worker %v; want %v", what, ok, got, wok, want)
		}
		c.save()
	}
	hit("reopened", true)
	// Touched, same bytes: the digest is recomputed and matches.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(bins["worker"], later, later); err != nil {
		t.Fatal(err)
	}
	hit("touched", true)
	// Rebuilt: another digest.
	if err := os.WriteFile(bins["gate"], []byte("another gate"), 0o755); err != nil {
		t.Fatal(err)
	}
	hit("rebuilt gate", false)
	// What the miss stored again holds.
	c = openHostCache(home, bins, log)
	c.Store("k", probe)
	c.putWorker("w", allCaps())
	c.save()
	hit("stored again", true)
	// Without a gate binary the roles differ: a miss.
	delete(bins, "gate")
	hit("no gate", false)
	c = openHostCache(home, bins, log)
	c.Store("k", probe)
	c.putWorker("w", allCaps())
	c.save()
	hit("stored without a gate", true)
	// A damaged file is a miss, not an error.
	if err := os.WriteFile(filepath.Join(home, HostCacheFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	hit("damaged", false)
}
