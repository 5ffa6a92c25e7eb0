// Command cyber-supervisor is the node's worker supervisor: a daemon
// (serve) with a local API, a one-shot runner (run) with the embedded
// store, and client commands against a running daemon.
//
// The command line is built with spf13/cobra. Each top-level command (a
// command group, with its subcommands) lives in a file of its own,
// cmd_<name>.go, as a constructor func(*app) *cobra.Command; commands.go
// lists the constructors in commandGroups, the one place a command is
// registered. To add a command group:
//
//  1. write cmd_<name>.go with newNameCmd(a *app) *cobra.Command: Use,
//     Short, Long (what its arguments may be), a GroupID, an Args
//     check (exactArgs, noArgs) and its flags, each value checked when it
//     is set (values.go: enumValue, sizeValue, limitDuration, intRange),
//     so that a bad value is a usage error before anything happens;
//  2. in RunE, check combinations of flags first (return usagef(...) for
//     exit 2), then act, and end with a.report(name, result, err, human):
//     the one cyber/cli/v1 envelope with --format json (every number a
//     decimal string), the human form otherwise, and the exit status;
//  3. reach the daemon with a.dialDaemon() (no daemon is "unavailable",
//     exit 4, with the socket's path), and map its errors with dm.err;
//  4. add newNameCmd to commandGroups and a test that runs the built
//     binary (cli_test.go);
//  5. give it and each subcommand two or three examples in
//     commandExamples (examples.go), which TestEveryCommandHasExamples
//     requires and parses.
//
// Global flags (--home, --format, --log-level, --log-format) are the
// root's persistent flags and may stand before or after the command.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

var discardLogger = slog.New(slog.DiscardHandler)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// A hang-up (a closed terminal or SSH session) is SIGTERM to a client
	// and nothing to the daemon (executeWith). Notify, not Ignore, here
	// too: workers must not inherit an ignored SIGHUP.
	hangups := make(chan os.Signal, 1)
	signal.Notify(hangups, syscall.SIGHUP)
	// A closed pipe on stdout or stderr (`run ... 2>&1 | head -1`, a
	// log reader that died) is a failed write, not Go's default death by
	// SIGPIPE: that would end a run or a daemon between two records, its
	// worker killed and its groups left for the next start to sweep.
	// Notify, not Ignore: an ignored signal stays ignored across exec.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	code := executeWith(ctx, hangups, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
