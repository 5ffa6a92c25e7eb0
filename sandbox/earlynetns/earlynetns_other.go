//go:build !linux

package earlynetns

import "os"

// Start does nothing: there are no network namespaces here.
func Start() {}

// Take returns nil.
func Take() *os.File { return nil }

// Pending reports false.
func Pending() bool { return false }
