// Command cyber-supervisor is the node's worker supervisor: a daemon
// (serve) with a local API, a one-shot runner (run) with the embedded
// store, and client commands against a running daemon.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/cyberia-to/cyber-supervisor/sandbox"
)

// Exit codes shared with the joy and cyber CLIs (protocol.ExitCode maps
// contract codes onto them).
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitUnsupported = 3
	exitBusy        = 4
	exitRejected    = 5
	exitCancelled   = 130
)

const usage = `usage: cyber-supervisor [--home DIR] COMMAND [ARGS]

commands:
  serve          run the daemon: scheduler, workers, API on a unix socket
  run INPUT      run one job with the embedded store and print the verified result
  submit INPUT   submit a job to the daemon (--wait to wait for its result)
  status JOB     show a job and its attempts
  list           list jobs (--state S)
  cancel JOB     cancel a job
  result JOB     print a job's accepted result
  events JOB     print a job's transitions
  capabilities   what the daemon's host enforces

The home is --home, then $CYBER_SUPERVISOR_HOME, then a per-user default.
Run a command with -h for its flags.
`

func main() {
	// A worker launched through the sandbox re-executes a binary in a
	// gated init mode; this binary never plays that part, but calling the
	// hook first keeps the rule "first thing in main" uniform.
	sandbox.MaybeRunInit()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	home := ""
	for len(args) > 0 && (args[0] == "--home" || args[0] == "-home") {
		if len(args) < 2 {
			fmt.Fprintln(stderr, "cyber-supervisor: --home needs a directory")
			return exitUsage
		}
		home, args = args[1], args[2:]
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	env := &cli{home: home, stdin: stdin, stdout: stdout, stderr: stderr}
	switch args[0] {
	case "serve":
		return env.serve(ctx, args[1:])
	case "run":
		return env.run(ctx, args[1:])
	case "submit":
		return env.submit(ctx, args[1:])
	case "status":
		return env.status(ctx, args[1:])
	case "list":
		return env.list(ctx, args[1:])
	case "cancel":
		return env.cancel(ctx, args[1:])
	case "result":
		return env.result(ctx, args[1:])
	case "events":
		return env.events(ctx, args[1:])
	case "capabilities":
		return env.capabilities(ctx, args[1:])
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "cyber-supervisor: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}

// cli carries what every command needs.
type cli struct {
	home           string
	stdin          io.Reader
	stdout, stderr io.Writer
}
