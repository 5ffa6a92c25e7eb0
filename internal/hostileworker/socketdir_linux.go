package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// Caps of fillSocketDir, so that a test that finds no bound fails instead
// of filling a disk: more than a small test home holds, far less than a
// host's disk.
const (
	fillSocketBigFiles   = 64      // files of fillSocketChunk bytes each
	fillSocketChunk      = 1 << 20 // below any RLIMIT_FSIZE the launcher sets
	fillSocketEmptyFiles = 10_000
)

// fillSocketDir fills the directory the worker binds its socket in (go-
// plugin's PLUGIN_UNIX_SOCKET_DIR; on the host, before issue #26, a
// directory of the home that the worker owned): first with files of 1 MiB
// until a write fails (bytes), then with empty files until a create fails
// (inodes). Its two report lines give what it managed to write.
func fillSocketDir() {
	dir := os.Getenv("PLUGIN_UNIX_SOCKET_DIR")
	buf := make([]byte, fillSocketChunk)
	var total int64
	var files int
	var err error
	for i := 0; err == nil && i < fillSocketBigFiles; i++ {
		var f *os.File
		if f, err = os.Create(filepath.Join(dir, fmt.Sprintf("big-%03d", i))); err != nil {
			break
		}
		files++
		var n int
		n, err = f.Write(buf)
		total += int64(n)
		f.Close()
	}
	report("fill socket dir bytes", fmt.Errorf("%d bytes in %d files, then: %v", total, files, err))
	files, err = 0, nil
	for i := 0; err == nil && i < fillSocketEmptyFiles; i++ {
		var f *os.File
		if f, err = os.Create(filepath.Join(dir, fmt.Sprintf("empty-%05d", i))); err == nil {
			files++
			f.Close()
		}
	}
	report("fill socket dir inodes", fmt.Errorf("%d empty files, then: %v", files, err))
}
