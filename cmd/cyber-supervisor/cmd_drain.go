package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

func newDrainCmd(a *app) *cobra.Command {
	var (
		timeout drainTimeout
		noWait  bool
	)
	cmd := &cobra.Command{
		Use:   "drain [--timeout D] [--no-wait]",
		Short: "Stop taking jobs, let the running ones end, then stop the daemon",
		Long: `Drain the daemon before an upgrade or maintenance: it dispatches no job any
more, lets the attempts it runs end on their own for up to --timeout
(default 1h; 0s hands them back at once), then stops as on SIGTERM. An
attempt still running at the deadline is interrupted and its job queued
again, whatever its retry policy and without costing it an attempt: for
the next start, or at once for another host of a cluster. Jobs submitted
meanwhile wait in the queue. The daemon exits 0 (a service manager that
restarts only on failure leaves it stopped).

drain waits until the daemon has exited and says which attempts ended
and which were handed back; --no-wait returns once the drain has begun.
A signal stops the waiting, not the drain. A second drain keeps the
earlier deadline; SIGTERM to the daemon stops it at once.`,
		GroupID: groupDaemon,
		Args:    noArgs("drain"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			d := api.DefaultDrainTimeout
			if timeout.set {
				d = timeout.d
			}
			return a.drain(cmd.Context(), d, noWait)
		},
	}
	cmd.Flags().Var(&timeout, "timeout", "how long running attempts may take to end before they are handed back (default 1h; 0s: at once)")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the drain has begun")
	return cmd
}

func (a *app) drain(ctx context.Context, timeout time.Duration, noWait bool) error {
	dm, err := a.dialDaemon()
	if err != nil {
		return a.report("drain", nil, err, nil)
	}
	pid := daemonPID(dm.socket)
	st, err := dm.Drain(ctx, timeout)
	if err != nil {
		return a.report("drain", nil, dm.err(err), nil)
	}
	view := apitypes.DrainReport{Deadline: st.Deadline, Ended: []string{}, HandedBack: []string{}, PID: pid}
	if noWait {
		return a.report("drain", apitypes.DrainStarted{Deadline: st.Deadline, Running: st.Running, PID: pid}, nil, func() {
			fmt.Fprintf(a.stdout, "draining: %d attempt(s) running (%s); deadline %s\n", len(st.Running), orDash(strings.Join(st.Running, " ")), st.Deadline.Format(time.RFC3339))
		})
	}
	seen := map[string]bool{}
	for {
		for _, id := range st.Running {
			seen[id] = true
		}
		if !a.json() {
			fmt.Fprintf(a.stderr, "draining: %d attempt(s) running (%s); deadline %s\n", len(st.Running), orDash(strings.Join(st.Running, " ")), st.Deadline.Format(time.RFC3339))
		}
		if st.Done {
			view.HandedBack = append(view.HandedBack, st.Running...)
			break
		}
		// A long poll: it answers when an attempt ends, and when the
		// drain is done (also as the daemon stops).
		next, err := dm.DrainStatus(ctx, len(st.Running))
		if ctx.Err() != nil {
			return a.report("drain", nil, &leavingError{
				msg:  fmt.Sprintf("stopped waiting (signal); the daemon on %s goes on draining and exits once its attempts have ended, or at %s", dm.socket, st.Deadline.Format(time.RFC3339)),
				left: apitypes.DrainStarted{Deadline: st.Deadline, Running: st.Running}}, nil)
		}
		if errors.Is(err, api.ErrUnavailable) {
			// The daemon went between two polls: which of the last
			// running ended on their own it did not say.
			view.Unsaid = st.Running
			break
		}
		if err != nil {
			return a.report("drain", nil, dm.err(err), nil)
		}
		st = next
	}
	for id := range seen {
		if !slices.Contains(view.HandedBack, id) && !slices.Contains(view.Unsaid, id) {
			view.Ended = append(view.Ended, id)
		}
	}
	slices.Sort(view.Ended)
	// The daemon stops: what was handed back is interrupted first.
	view.Exited = waitExit(ctx, pid, dm.socket, drainExitBound)
	if view.Exited && len(view.Unsaid) > 0 {
		settleUnsaid(ctx, dm.home, &view)
	}
	if !view.Exited && ctx.Err() != nil {
		return a.report("drain", nil, &leavingError{
			msg:  fmt.Sprintf("stopped waiting (signal); the daemon on %s has drained and is stopping (handed back: %s)", dm.socket, orDash(strings.Join(view.HandedBack, " "))),
			left: view}, nil)
	}
	return a.report("drain", view, nil, func() {
		fmt.Fprintf(a.stdout, "drained: %d attempt(s) ended (%s), %d handed back to the queue (%s)\n",
			len(view.Ended), orDash(strings.Join(view.Ended, " ")), len(view.HandedBack), orDash(strings.Join(view.HandedBack, " ")))
		if len(view.Unsaid) > 0 {
			fmt.Fprintf(a.stdout, "the daemon went before it said how these ended: %s (see status)\n", strings.Join(view.Unsaid, " "))
		}
		if view.Exited {
			fmt.Fprintf(a.stdout, "the daemon on %s has exited\n", dm.socket)
		} else {
			fmt.Fprintf(a.stdout, "the daemon on %s stopped answering; it is still stopping\n", dm.socket)
		}
	})
}

// settleUnsaid reads, once the daemon has exited, how the attempts it
// went before naming ended: on the home's own store, which the exit
// left free, an attempt the drain interrupted was handed back and any
// other end is its own. (A host of a cluster keeps its jobs on etcd:
// they stay unsaid.)
func settleUnsaid(ctx context.Context, home string, v *apitypes.DrainReport) {
	sup, err := supervisor.OpenOffline(ctx, home, discardLogger)
	if err != nil {
		return
	}
	defer sup.Close(context.WithoutCancel(ctx))
	var still []string
	for _, id := range v.Unsaid {
		st, err := sup.Status(ctx, id)
		if err != nil || len(st.Attempts) == 0 {
			still = append(still, id)
			continue
		}
		switch last := st.Attempts[len(st.Attempts)-1]; {
		case supervisor.InterruptedByShutdown(last):
			v.HandedBack = append(v.HandedBack, id)
		case last.State.Terminal():
			v.Ended = append(v.Ended, id)
		default:
			still = append(still, id)
		}
	}
	slices.Sort(v.Ended)
	slices.Sort(v.HandedBack)
	v.Unsaid = still
}

// drainExitBound bounds the wait for the daemon's exit once drained: its
// stop (serveStopBound) and a margin.
const drainExitBound = serveStopBound + 10*time.Second

// daemonPID is the pid of the process listening on sock (SO_PEERCRED of
// a connection to it), 0 when it cannot be read.
func daemonPID(sock string) int {
	c, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return 0
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// waitExit waits up to bound for the daemon to exit: its process gone
// (pid), or without a pid its socket refusing connections.
func waitExit(ctx context.Context, pid int, sock string, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for {
		if pid > 0 {
			if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
				return true
			}
		} else if probeDaemon(sock) != nil {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// drainTimeout is drain's --timeout: 0s (hand back at once) up to
// api.MaxDrainTimeout, whole milliseconds.
type drainTimeout struct {
	d   time.Duration
	set bool
}

func (v *drainTimeout) String() string {
	if !v.set {
		return ""
	}
	return v.d.String()
}
func (v *drainTimeout) Type() string { return "DURATION" }
func (v *drainTimeout) Set(s string) error {
	d, err := parseDuration(s, "0s, 10m or 1h")
	switch {
	case err != nil:
		return err
	case d < 0:
		return fmt.Errorf("%q: not before now (0s hands the attempts back at once)", s)
	case d%time.Millisecond != 0:
		return fmt.Errorf("%q: whole milliseconds", s)
	case d > api.MaxDrainTimeout:
		return fmt.Errorf("%q: at most %s", s, api.MaxDrainTimeout)
	}
	v.d, v.set = d, true
	return nil
}
