package sandbox

import "github.com/cyberia-to/cyber-supervisor/sandbox/gate"

// MaybeRunInit must be the first statement of the worker's main (and of a
// test binary's TestMain that serves as a worker): when the process was
// started by this package as a gated init (and no separate gate binary is
// configured) it never returns. Otherwise it returns at once. See
// package gate.
func MaybeRunInit() { gate.MaybeRun() }
