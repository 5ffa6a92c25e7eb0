// Command sandbox-gate is the gated init of a sandboxed worker: started by
// the supervisor's sandbox with the gate descriptor, it waits for its
// configuration, builds the jail and the hardening, and execs the worker
// binary. It links only package sandbox/gate, so it starts in about a
// millisecond. Run any other way it does nothing.
package main

import (
	"fmt"
	"os"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

func main() {
	gate.MaybeRun()
	fmt.Fprintln(os.Stderr, "sandbox-gate: started only by cyber-supervisor's sandbox, as a worker's gated init")
	os.Exit(2)
}
