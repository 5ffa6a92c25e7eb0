// Command nox-worker is the worker of cyber-supervisor: started by
// go-plugin it serves one job attempt at a time; started by a person it
// offers the raw engine (eval) and joy-style direct commands.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes shared with the joy and cyber CLIs.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitUnsupported = 3
	exitBusy        = 4
	exitRejected    = 5
	exitCancelled   = 130
)

const usage = `usage: nox-worker COMMAND [ARGS]

commands:
  eval      run the raw nox engine on a formula (JSON out)

Started by cyber-supervisor (through go-plugin) it serves the worker
protocol instead.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "eval":
		return runEval(ctx, args[1:], stdin, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "nox-worker: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}
