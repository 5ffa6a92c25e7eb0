// Command sandbox-gate is the gated init of a sandboxed worker: started by
// the supervisor's sandbox with the gate descriptor, it waits for its
// configuration, builds the jail and the hardening, and execs the worker
// binary.
//
// Built with cgo (the default where gcc is present) the init is C and runs
// from an ELF constructor before the Go runtime starts (*.c); built
// with CGO_ENABLED=0 it is package sandbox/gate, which starts in about two
// milliseconds. Both read the same wire. Run any other way it does nothing.
package main

import (
	"fmt"
	"os"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

func main() {
	gate.MaybeRun()
	impl := "Go"
	if cInit {
		impl = "C"
	}
	fmt.Fprintf(os.Stderr, "sandbox-gate (%s init): started only by cyber-supervisor's sandbox, as a worker's gated init\n", impl)
	os.Exit(2)
}
