package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// app carries what every command needs: the global flags and the
// process's streams.
type app struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer

	home      string
	format    *enumValue
	logLevel  *enumValue
	logFormat *enumValue

	// hangupLog, set by serve, is where a SIGHUP the daemon ignores is
	// said (hangups.go).
	hangupMu  sync.Mutex
	hangupLog *slog.Logger
}

func newApp(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) *app {
	return &app{
		ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr,
		format:    newEnum("human", "human", "json"),
		logLevel:  newEnum("", "debug", "info", "warn", "error"),
		logFormat: newEnum("text", "text", "json"),
	}
}

func (a *app) json() bool { return a.format.value == "json" }

// usageError is a command line the CLI cannot act on: exit 2, and with
// --format json the envelope with code "usage".
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitStatus is returned by a command that has reported its outcome
// itself (envelope or human output) and only needs the process status.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// execute runs the command line args and returns the process status.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return executeWith(ctx, nil, args, stdin, stdout, stderr)
}

// executeWith is execute with the process's hang-ups (SIGHUP): they end
// every command as SIGTERM does, but serve, which ignores them
// (hangups.go).
func executeWith(ctx context.Context, hangups <-chan os.Signal, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := newApp(ctx, stdin, stdout, stderr)
	root := newRootCmd(a)
	prepareFor(root, args)
	if hangups != nil {
		var stop func()
		ctx, stop = a.onHangups(ctx, hangups, isServe(root, args))
		defer stop()
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	var st exitStatus
	switch {
	case err == nil:
		return protocol.ExitOK
	case errors.As(err, &st):
		return int(st)
	}
	// A usage error: from cobra (unknown command or flag, a flag value
	// that refused itself, wrong arguments) or from a command's checks.
	// The flag parse may have stopped before --format: look for it.
	if !a.json() && wantsJSON(args) {
		a.format.value = "json"
	}
	return a.reportUsage(cmd, err)
}

// wantsJSON finds --format json among args that failed to parse.
func wantsJSON(args []string) bool {
	for i, s := range args {
		if s == "--" {
			return false
		}
		if s == "--format=json" || (s == "--format" && i+1 < len(args) && args[i+1] == "json") {
			return true
		}
	}
	return false
}

func (a *app) reportUsage(cmd *cobra.Command, err error) int {
	name := "cyber-supervisor"
	path := name
	if cmd != nil {
		name, path = commandName(cmd), cmd.CommandPath()
	}
	msg := err.Error()
	if a.json() {
		protocol.WriteEnvelope(a.stdout, name, nil, protocol.Errorf(protocol.CodeUsage, "%s", protocol.SafeMessage(msg)))
		return protocol.ExitUsage
	}
	fmt.Fprintf(a.stderr, "%s: %s\nRun '%s --help' for usage.\n", path, msg, path)
	return protocol.ExitUsage
}

// commandName is the envelope's command: the path below the root
// ("run", "store check").
func commandName(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return "cyber-supervisor"
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// logger is the process's log: --log-format on stderr at --log-level,
// or at def when the flag was not given.
func (a *app) logger(def string) *slog.Logger {
	lvlName := a.logLevel.value
	if lvlName == "" {
		lvlName = def
	}
	var lvl slog.Level
	lvl.UnmarshalText([]byte(lvlName)) // the enum allows only valid names
	opts := &slog.HandlerOptions{Level: lvl}
	if a.logFormat.value == "json" {
		return slog.New(slog.NewJSONHandler(a.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(a.stderr, opts))
}
