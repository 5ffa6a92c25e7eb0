package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"
)

// A hang-up (SIGHUP: the terminal or SSH session that started the
// command closed) must not be a crash. A client command (run, submit
// --wait, events --follow, invoke --wait, drain, ...) treats it as
// SIGTERM: run cancels its job, a command that waits stops waiting and
// says what goes on. The daemon ignores it, as daemons do, and says so in
// its log: started with `serve &` from a shell, it would otherwise die
// with the session at once (exit 129, no shutdown), its running attempts
// unknown at the next start. There are no logs to reopen (they go to
// stderr) and no configuration to reload (it is the command line).

// onHangups ends ctx at the first hang-up, unless daemon: then every
// hang-up is logged (once serve has its log) and ignored. stop ends the
// watch.
func (a *app) onHangups(ctx context.Context, hangups <-chan os.Signal, daemon bool) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hangups:
				if !daemon {
					cancel()
					return
				}
				a.hangupMu.Lock()
				log := a.hangupLog
				a.hangupMu.Unlock()
				if log != nil {
					log.Info("SIGHUP ignored: the daemon goes on (SIGTERM stops it, drain lets its attempts end first)")
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() { close(done); cancel() }
}

// isServe reports whether args run the daemon (serve), found the way
// cobra will find it.
func isServe(root *cobra.Command, args []string) bool {
	c, _, err := root.Find(args)
	return err == nil && c != nil && c.Name() == "serve" && c.Parent() == root
}
