package testbin

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBuiltOncePerInputs: two test processes' builds of one package with
// the same settings are one binary (hard links of the cache's file), and
// other settings make another.
func TestBuiltOncePerInputs(t *testing.T) {
	dir := t.TempDir()
	a, b, tagged := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "tagged")
	for _, dst := range []string{a, b} {
		if err := BuildPure("../..", "./internal/launchfloor/empty", dst); err != nil {
			t.Fatal(err)
		}
	}
	if err := BuildTags("../..", "./internal/launchfloor/empty", tagged, "testbinother"); err != nil {
		t.Fatal(err)
	}
	sa, _ := os.Stat(a)
	sb, _ := os.Stat(b)
	st, _ := os.Stat(tagged)
	if !os.SameFile(sa, sb) {
		t.Fatal("the same build made twice")
	}
	if os.SameFile(sa, st) {
		t.Fatal("a build with other tags shares the first one's file")
	}
	// A caller's name is its own: replacing it leaves the cache alone.
	if err := BuildPure("../..", "./internal/launchfloor/empty", a); err != nil {
		t.Fatal(err)
	}
	if sa2, _ := os.Stat(a); !os.SameFile(sa2, sb) {
		t.Fatal("a second build of the same name is another file")
	}
}
