// Package fsync holds the one way this project makes a directory entry
// durable: the directory itself synced after a rename or create in it.
package fsync

import (
	"fmt"
	"os"
)

// Dir syncs the directory dir, so that the names created, renamed or
// removed in it survive a crash.
func Dir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
