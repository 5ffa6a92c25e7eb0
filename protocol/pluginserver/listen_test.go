package pluginserver

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestListenUnixFreshNames: each listener gets a socket of its own in the
// directory, named as go-plugin's server names them, and nothing else is
// left there.
func TestListenUnixFreshNames(t *testing.T) {
	dir := t.TempDir()
	name := regexp.MustCompile(`^plugin[0-9]+$`)
	seen := map[string]bool{}
	for range 3 {
		l, err := listenUnix(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		path := l.Addr().String()
		if filepath.Dir(path) != dir || !name.MatchString(filepath.Base(path)) {
			t.Fatalf("socket %s: not a plugin<n> in %s", path, dir)
		}
		if seen[path] {
			t.Fatalf("socket %s given twice", path)
		}
		seen[path] = true
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSocket == 0 {
			t.Fatalf("%s: not a socket (%v, %v)", path, fi, err)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(seen) {
		t.Fatalf("%d entries in %s, want the %d sockets alone", len(ents), dir, len(seen))
	}
}
