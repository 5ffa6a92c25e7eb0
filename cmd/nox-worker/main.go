// Command nox-worker is the worker of cyber-supervisor. Started by go-plugin
// (the handshake's magic cookie is in its environment) and without
// arguments, it serves the worker protocol for the supervisor. Started by a
// person it offers joy-style direct commands (describe, run, prove,
// verify) that go through the very same worker code, and the raw engine
// (eval).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Exit codes shared with the joy and cyber CLIs (DESIGN.md §5).
const (
	exitOK          = protocol.ExitOK
	exitFailed      = protocol.ExitFailed
	exitUsage       = protocol.ExitUsage
	exitUnsupported = protocol.ExitUnsupported
	exitBusy        = protocol.ExitUnavailable
	exitRejected    = protocol.ExitRejected
	exitCancelled   = protocol.ExitCancelled
)

const usage = `usage: nox-worker COMMAND [ARGS]

commands:
  describe  print the worker's capabilities and descriptor
  run       execute a program: nox-worker run INPUT [--input-values V1,V2 | --input-file F] [--budget N]
  prove     execute and certify: nox-worker prove INPUT [--output FILE] [--force] [...]
  verify    check a certificate: nox-worker verify CERT [--program INPUT] [--claim V1,V2] [...]
  eval      run the raw nox engine on a formula (JSON out)

INPUT is a ProgramBundle (.json) or a raw formula (.nox). run, prove,
verify and describe take --format human|json; json prints exactly one
cyber/cli/v1 object. "nox-worker COMMAND --help" says more.

Started by cyber-supervisor (through go-plugin) it serves the worker
protocol instead.
`

func main() {
	os.Exit(realMain(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

// realMain picks the mode: plugin when go-plugin started us (its cookie is
// set and there are no arguments), the CLI otherwise.
func realMain(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 && getenv(protocol.PluginCookieKey) != "" {
		return servePlugin(getenv, stderr)
	}
	ctx, stop := signalContext()
	defer stop()
	return run(ctx, args, stdin, stdout, stderr)
}

// errInterrupted is why a signal ended a direct command: the worker
// reports a context's cause as it is, so the message says what happened
// (a plain cancellation would read "cancelled: cancelled").
var errInterrupted = protocol.Errorf(protocol.CodeCancelled, "interrupted (signal)")

// signalContext is cancelled, with errInterrupted as its cause, on SIGINT
// or SIGTERM.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel(errInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "eval":
		return runEval(ctx, args[1:], stdin, stdout, stderr)
	case "describe", "run", "prove", "verify":
		return runDirect(ctx, args[0], args[1:], stdout, stderr)
	case "-h", "--help":
		printHelp(stdout, "nox-worker", usage, wantsJSON(args[1:]))
		return exitOK
	case "help":
		return help(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "nox-worker: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}

// help prints the usage, or with a command that command's, on stdout
// (with --format json, as an envelope).
func help(ctx context.Context, topic []string, stdout, stderr io.Writer) int {
	json := wantsJSON(topic)
	topic = withoutFormat(topic)
	switch {
	case len(topic) == 0:
		printHelp(stdout, "nox-worker", usage, json)
		return exitOK
	case len(topic) > 1:
	case topic[0] == "eval":
		return runEval(ctx, []string{"--help"}, nil, stdout, stderr)
	case commandUsage[topic[0]] != "":
		printHelp(stdout, topic[0], commandUsage[topic[0]], json)
		return exitOK
	}
	if json {
		protocol.WriteEnvelope(stdout, "help", nil, protocol.Errorf(protocol.CodeInvalidJob, "unknown help topic %q", strings.Join(topic, " ")))
		return exitUsage
	}
	fmt.Fprintf(stderr, "nox-worker help: unknown help topic %q\n\n%s", strings.Join(topic, " "), usage)
	return exitUsage
}

// withoutFormat is args without their --format flags (help's topic).
func withoutFormat(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if _, inNext, ok := formatFlag(args, i); ok {
			if inNext {
				i++
			}
			continue
		}
		out = append(out, args[i])
	}
	return out
}
