package bolt

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkCheckFile: the check every open makes, of a store of 500
// jobs, on the mapped pages (what a store file gets) and reading a page
// at a time (a file that cannot be mapped, and every file before), side
// by side.
func BenchmarkCheckFile(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	populate(b, s, 500)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, FileName))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for _, mode := range []struct {
		name   string
		mapped bool
	}{{"mapped", true}, {"read-by-page", false}} {
		b.Run(mode.name, func(b *testing.B) {
			defer func(m bool) { mapPages = m }(mapPages)
			mapPages = mode.mapped
			for range b.N {
				if _, err := checkFile(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
