package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
)

// noDaemonError: nothing answers on the home's socket.
type noDaemonError struct {
	socket string
	// cli is how the commands it suggests begin (homeCLI).
	cli string
	// following is the job this command was following when the daemon
	// went (run, submit --wait): the job itself is not lost.
	following string
}

func (e *noDaemonError) Error() string {
	if e.following != "" {
		return fmt.Sprintf("the daemon on %s stopped answering while this command followed job %s: a daemon's stop interrupts running attempts and queues their jobs for its next start when their retry policy allows; start `%s serve`, then see `%s status %s`",
			e.socket, e.following, e.cli, e.cli, e.following)
	}
	return fmt.Sprintf("no daemon on %s; start `%s serve`", e.socket, e.cli)
}

// daemon is a connection to the home's daemon.
type daemon struct {
	*api.Client
	home, socket string
	// cli is how a command this one suggests begins (homeCLI).
	cli string
	// readOnly: no daemon owns the home; its store answers the reads in
	// this process (dialReader), held open until release.
	readOnly bool
	release  func()
}

// done lets go of what the connection holds: the store a read-only one
// opened (a daemon's socket holds nothing between requests).
func (d *daemon) done() {
	if d.release != nil {
		d.release()
	}
}

// homeCLI is how a command that a message suggests begins: with the
// home when --home named it, so that the suggestion acts on this home
// and not on the default one.
func (a *app) homeCLI(home string) string {
	if a.home == "" {
		return "cyber-supervisor"
	}
	return "cyber-supervisor --home " + shellQuote(home)
}

// dialDaemon finds the daemon of the home: a *noDaemonError when no
// daemon listens there, forbidden when this user may not reach its
// socket (the home and the socket are its owner's alone: a daemon may
// well be running, and starting another would not help).
func (a *app) dialDaemon() (*daemon, error) {
	home, err := supervisor.ResolveHome(a.home)
	if err != nil {
		return nil, err
	}
	sock := supervisor.SocketPath(home)
	switch err := probeDaemon(sock); {
	case errors.Is(err, fs.ErrPermission):
		return nil, protocol.Errorf(protocol.CodeForbidden, "%s: permission denied: only the supervisor's owner or root may use its socket", sock)
	case err != nil:
		return nil, &noDaemonError{socket: sock, cli: a.homeCLI(home)}
	}
	return &daemon{Client: api.NewClient(sock), home: home, socket: sock, cli: a.homeCLI(home)}, nil
}

// probeDaemon connects to the socket once: nil when something accepts
// connections there (a stale socket file of a dead daemon refuses them).
func probeDaemon(sock string) error {
	c, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// daemonErr names the socket when the daemon stops answering mid-way; a
// request a signal ended is cancelled (exit 130), not a daemon gone.
func (d *daemon) err(err error) error {
	switch {
	case errors.Is(err, api.ErrUnavailable):
		return &noDaemonError{socket: d.socket, cli: d.cli}
	case errors.Is(err, context.Canceled):
		return errInterrupted
	}
	return err
}

// followErr is err of a command that was following job: a daemon that
// stopped answering then says the job is not lost (noDaemonError's
// following); any other error is err's.
func (d *daemon) followErr(err error, job string) error {
	if errors.Is(err, api.ErrUnavailable) {
		return &noDaemonError{socket: d.socket, cli: d.cli, following: job}
	}
	return d.err(err)
}

// errInterrupted: a signal ended the command while the daemon was
// answering it (code interrupted, exit 130: nothing was cancelled).
var errInterrupted = protocol.Errorf(protocol.CodeInterrupted, "by a signal")

// signalReason is what a signal's end of a command is called: the cancel
// reason of a job run cancels on a signal, and errInterrupted's message.
const signalReason = "interrupted (signal)"
