package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func newCancelCmd(a *app) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel JOB",
		Short: "Cancel a job",
		Long: `Cancel a job. A queued job is cancelled at once; a running attempt is told
through the cancellation protocol, acknowledges, and is killed if it has
not ended within the grace. A job that ended unknown (its last attempt
may have run when a supervisor crashed) ends cancelled, its attempt left
unknown: resolve JOB --attempt N --cancel.`,
		GroupID: groupJobs,
		Args:    exactArgs(1, "cancel needs exactly one JOB id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			job := args[0]
			dm, err := a.dialDaemon()
			if err != nil {
				return a.report("cancel", nil, err, nil)
			}
			st, err := dm.Cancel(cmd.Context(), job, reason)
			if err != nil {
				return a.report("cancel", nil, dm.err(err), nil)
			}
			view := apitypes.Cancelled{JobID: job, State: st.Job.State, Requested: st.Requested, Acknowledged: st.Acknowledged, AlreadyDone: st.AlreadyDone}
			return a.report("cancel", view, nil, func() {
				switch {
				case st.Requested && st.Job.State.Terminal() && st.Job.Resolved != nil && st.Job.Resolved.As == store.ResolveCancel && st.Job.Resolved.Attempt == st.Job.Attempts:
					fmt.Fprintf(a.stdout, "%s: %s; attempt %d, whose outcome is unknown, stays so\n", job, st.Job.State, st.Job.Resolved.Attempt)
				case st.AlreadyDone:
					fmt.Fprintf(a.stdout, "%s had already ended (%s)\n", job, st.Job.State)
				case st.Job.State.Terminal():
					// Ended by this request before the reply (a queued
					// job is cancelled at once): not merely requested.
					fmt.Fprintf(a.stdout, "%s: %s\n", job, st.Job.State)
				case st.Acknowledged:
					fmt.Fprintf(a.stdout, "%s: cancellation acknowledged by the worker\n", job)
				default:
					fmt.Fprintf(a.stdout, "%s: cancellation requested\n", job)
				}
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the events)")
	return cmd
}
