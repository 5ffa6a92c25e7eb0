// Package early starts, before the heavy package initialisation of the
// supervisor's binary, what a one-shot isolated run will need first and
// what depends on nothing of its home: its worker's network namespace
// (package earlynetns says why that pays). It imports nothing that would
// make it wait for other packages' initialisation (package layout, which
// needs package limits, starts the rest a little later). main imports it
// for this effect only.
package early

import (
	"os"

	"github.com/cyberia-to/cyber-supervisor/sandbox/earlynetns"
)

// IsolatedRun is the guess isolatedRun made from this process's arguments.
var IsolatedRun bool

func init() {
	if isolatedRun(os.Args[1:]) {
		IsolatedRun = true
		earlynetns.Start()
		go checkPidfd()
	}
}

// checkPidfd makes package os check now, once, that pidfds work, which it
// otherwise does at the first process start, the worker's: pidfd_open,
// waitid and pidfd_send_signal on itself, and a clone whose child exits at
// once (~0.1 ms). os.FindProcess runs the same check.
func checkPidfd() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Release()
	}
}

// isolatedRun guesses from the raw arguments, before any flag is parsed,
// whether this is `run` without --isolation off. It is a guess, not a
// decision: the command line is still parsed and checked as always, and
// a wrong guess costs one namespace made on an idle core and dropped at
// exit (a false "no" costs nothing: the run makes its namespace later,
// as it otherwise would).
func isolatedRun(args []string) bool {
	run := false
	for i, a := range args {
		switch {
		case a == "--":
			return run
		case a == "run":
			run = true
		case a == "--isolation=off":
			return false
		case a == "--isolation" && i+1 < len(args) && args[i+1] == "off":
			return false
		}
	}
	return run
}
