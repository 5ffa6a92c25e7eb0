package artifacts

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkSandboxes is what a start does with the sandboxes of 10,000
// jobs (a home that kept that many certificates): it scans them once,
// reads the scan for evidence of a restore, and prunes from the scan
// (keeping all here: nothing is opened again).
func BenchmarkSandboxes(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "sandboxes")
	for i := range 10000 {
		if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("job-%05d", i), "1"), 0o700); err != nil {
			b.Fatal(err)
		}
	}
	r, err := OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.Run("scan-and-prune", func(b *testing.B) {
		for range b.N {
			inv, err := r.Scan()
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			inv.Each(func(string, uint32) bool { n++; return true })
			if err := r.Prune(inv, func(string, uint32) bool { return true }); err != nil || n != 10000 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("remove-all-keeping", func(b *testing.B) {
		for range b.N {
			if err := r.RemoveAll(func(string, uint32) bool { return true }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
