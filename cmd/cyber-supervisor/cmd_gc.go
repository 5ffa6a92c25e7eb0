package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func newGCCmd(a *app) *cobra.Command {
	var olderThan retentionValue
	state := newEnum("", string(lifecycle.Accepted), string(lifecycle.Rejected), string(lifecycle.Failed), string(lifecycle.Cancelled))
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove ended jobs and their sandboxes, keeping tombstones",
		Long: `Remove ended jobs — accepted, rejected, failed or cancelled, never a job
that is still queued or running and never an unknown one — that ended at
least --older-than ago (default: any), with their records and sandboxes
(accepted certificates included). Each removed job leaves a small
tombstone (its id and spec digest): its id is never used again, for
another payload or the same one. Prints what was removed. A verify job's
certificate stored by reference goes with the last job that names it;
without --state, so do the stored certificates no job names that were
stored before the cutoff and at least an hour ago.

Through the daemon when one owns the home, else on the store directly.
serve --retain DURATION does the same periodically.`,
		GroupID: groupJobs,
		Args:    noArgs("gc"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st := lifecycle.State(state.value)
			if dm, err := a.dialDaemon(); err == nil {
				rep, err := dm.GC(cmd.Context(), olderThan.d, state.value)
				return a.reportGC(rep, dm.err(err))
			}
			home, err := supervisor.ResolveHome(a.home)
			if err != nil {
				return a.report("gc", nil, err, nil)
			}
			sup, err := supervisor.OpenOffline(cmd.Context(), home, a.logger("warn"))
			if errors.Is(err, store.ErrLocked) {
				// A daemon started meanwhile.
				if dm, derr := a.dialDaemon(); derr == nil {
					rep, err := dm.GC(cmd.Context(), olderThan.d, state.value)
					return a.reportGC(rep, dm.err(err))
				}
			}
			if err != nil {
				return a.report("gc", nil, err, nil)
			}
			defer sup.Close(cmd.Context())
			rep, err := sup.GC(cmd.Context(), supervisor.GCRequest{OlderThan: olderThan.d, State: st})
			if err != nil {
				return a.reportGC(nil, err)
			}
			v := api.GCReportOf(rep)
			return a.reportGC(&v, nil)
		},
	}
	cmd.Flags().Var(&olderThan, "older-than", "only jobs that ended at least this long ago, e.g. 720h (default: every ended job)")
	cmd.Flags().Var(state, "state", "only jobs that ended in this state: accepted, rejected, failed or cancelled (default: all four)")
	return cmd
}

func (a *app) reportGC(rep *apitypes.GCReport, err error) error {
	if err != nil {
		return a.report("gc", nil, err, nil)
	}
	return a.report("gc", rep, nil, func() {
		fmt.Fprintf(a.stdout, "removed %d job(s) that ended before %s\n", len(rep.Removed), rep.EndedBefore.Format(time.RFC3339))
		if len(rep.Removed) == 0 {
			return
		}
		tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "JOB\tSTATE\tENDED")
		for _, r := range rep.Removed {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.JobID, r.State, r.Ended.Format(time.RFC3339))
		}
		tw.Flush()
	})
}
