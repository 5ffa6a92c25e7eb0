package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func newResolveCmd(a *app) *cobra.Command {
	var (
		retry, cancel bool
		reason        string
	)
	attempt := newIntRange(1, 1<<32-1)
	cmd := &cobra.Command{
		Use:   "resolve JOB --attempt N (--retry | --cancel) [--reason R]",
		Short: "End a job's unknown state: one more attempt, or cancelled",
		Long: `Resolve a job that ended unknown: its last attempt N was running when a
supervisor crashed (or its host was lost) and may have run; no retry was
left, so nothing moves the job by itself. --attempt names that attempt
(status shows it), as operation reconcile names the act's attempt.

--retry queues the job for one more attempt beyond its retry policy;
--cancel ends it cancelled, after which gc may remove it. Either way the
unknown attempt stays as it is: it was never accepted, and it never can
be. The same resolution again changes nothing; another one for the same
attempt is refused (stale_state, exit 5), and so is one for a job that is
not unknown. cancel JOB does what --cancel does.

Through the daemon when one owns the home, else on the store directly.`,
		GroupID: groupJobs,
		Args:    exactArgs(1, "resolve needs exactly one JOB id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if retry == cancel {
				return usagef("resolve needs one of --retry and --cancel")
			}
			if !attempt.set {
				return usagef("resolve needs --attempt N, the job's unknown attempt (see status JOB)")
			}
			as := store.ResolveRetry
			if cancel {
				as = store.ResolveCancel
			}
			req := supervisor.ResolveRequest{Attempt: uint32(attempt.v), As: as, Reason: reason}
			st, err := a.resolve(cmd.Context(), args[0], req)
			if err != nil {
				return a.report("resolve", nil, err, nil)
			}
			return a.report("resolve", st, nil, func() {
				did := "resolved"
				if !st.Resolved {
					did = "was resolved so already"
				}
				switch as {
				case store.ResolveRetry:
					fmt.Fprintf(a.stdout, "%s: %s: attempt %d stays unknown; queued for attempt %d\n", args[0], did, req.Attempt, req.Attempt+1)
				default:
					fmt.Fprintf(a.stdout, "%s: %s: cancelled; attempt %d stays unknown\n", args[0], did, req.Attempt)
				}
			})
		},
	}
	cmd.Flags().Var(attempt, "attempt", "the job's unknown attempt (its last)")
	cmd.Flags().BoolVar(&retry, "retry", false, "queue the job for one more attempt")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "end the job cancelled")
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded with the resolution and in the events)")
	return cmd
}

// resolve resolves through the daemon when one owns the home, else on
// the home's store (as gc does).
func (a *app) resolve(ctx context.Context, id string, req supervisor.ResolveRequest) (*apitypes.ResolveReply, error) {
	through := func(dm *daemon) (*apitypes.ResolveReply, error) {
		st, err := dm.Resolve(ctx, id, req.Attempt, req.As, req.Reason)
		return st, dm.err(err)
	}
	if dm, err := a.dialDaemon(); err == nil {
		return through(dm)
	}
	home, err := supervisor.ResolveHome(a.home)
	if err != nil {
		return nil, err
	}
	sup, err := supervisor.OpenOffline(ctx, home, a.logger("warn"))
	if errors.Is(err, store.ErrLocked) {
		// A daemon started meanwhile.
		if dm, derr := a.dialDaemon(); derr == nil {
			return through(dm)
		}
	}
	if err != nil {
		return nil, err
	}
	defer sup.Close(context.WithoutCancel(ctx))
	st, err := sup.Resolve(ctx, id, req)
	if err != nil {
		return nil, err
	}
	reply := api.ResolveReplyOf(&st)
	return &reply, nil
}
