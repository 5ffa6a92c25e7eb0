// Command sandbox-gate is the gated init of a sandboxed worker: started by
// the supervisor's sandbox with the gate descriptor, it waits for its
// configuration, builds the jail and the hardening, and execs the worker
// binary.
//
// The init is C and runs from an ELF constructor before the Go runtime
// starts (*.c), so the binary must be built with cgo (scripts/build.sh,
// scripts/build-gate.sh). Run any other way it does nothing: main only
// says what it is, and a build without cgo, which carries no init, says
// that it cannot serve.
package main

import (
	"fmt"
	"os"
)

func main() {
	if !cInit {
		fmt.Fprintln(os.Stderr, "sandbox-gate: built without cgo, so without its C init; build it with scripts/build-gate.sh")
		os.Exit(2)
	}
	fmt.Fprintln(os.Stderr, "sandbox-gate: started only by cyber-supervisor's sandbox, as a worker's gated init")
	os.Exit(2)
}
