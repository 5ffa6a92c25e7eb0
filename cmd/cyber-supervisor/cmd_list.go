package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

func newListCmd(a *app) *cobra.Command {
	states := make([]string, 0, len(lifecycle.States))
	for _, s := range lifecycle.States {
		states = append(states, string(s))
	}
	state := newEnum("", states...)
	limit := newIntRange(1, 1<<30)
	var watch bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs in submission order",
		Long: `List jobs in submission order, oldest first. --limit N keeps the N most
recently submitted; --state S only the jobs in state S. With --watch, then
print a line for each job submitted or changed (in state S, with --state)
as it happens, until interrupted (Ctrl-C ends it, exit 0).`,
		GroupID: groupJobs,
		Args:    noArgs("list"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if watch && a.json() {
				return usagef("list --watch prints to a terminal; with --format json, follow GET /v1/changes")
			}
			dm, err := a.dialReader()
			if err != nil {
				return a.report("list", nil, err, nil)
			}
			var lw *jobWatch
			if watch {
				if lw, err = a.listWatch(cmd.Context(), dm, state.value); err != nil {
					return a.report("list", nil, dm.err(err), nil)
				}
			}
			var jobs []apitypes.Job
			if n := limit.or(0); n > 0 && n <= api.MaxListLimit {
				jobs, err = dm.ListLast(cmd.Context(), state.value, n)
			} else {
				// Every page, then submission order; more than one page of
				// the newest is the tail of them all (the API answers at
				// most MaxListLimit at once).
				jobs, err = dm.List(cmd.Context(), state.value)
				slices.SortFunc(jobs, func(x, y apitypes.Job) int { return cmp.Compare(x.Seq, y.Seq) })
				if n > 0 && len(jobs) > n {
					jobs = jobs[len(jobs)-n:]
				}
			}
			if err != nil {
				return a.report("list", nil, dm.err(err), nil)
			}
			rows := make([]apitypes.Job, 0, len(jobs))
			for _, j := range jobs {
				rows = append(rows, listedJob(j, dm.home))
			}
			err = a.report("list", rows, nil, func() {
				tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "JOB\tSTATE\tOP\tATTEMPTS\tSUBMITTED\tUPDATED")
				for _, j := range jobs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", j.JobID, j.State, j.Operation, j.Attempts,
						j.Created.Format(time.RFC3339), j.Updated.Format(time.RFC3339))
				}
				tw.Flush()
			})
			if err != nil || !watch {
				return err
			}
			if err := lw.run(cmd.Context(), dm); err != nil {
				return a.report("list", nil, err, nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "then print each job submitted or changed, as it happens, until interrupted (Ctrl-C)")
	cmd.Flags().Var(state, "state", "only jobs in this state (default: every state)")
	cmd.Flags().Var(limit, "limit", "only the N most recently submitted jobs (default: all)")
	return cmd
}

// noArgs is cobra.NoArgs with the command's own message.
func noArgs(name string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		// A command of subcommands given a word that is none of them
		// (store chek): that word is a mistyped subcommand, not an
		// argument.
		if cmd.HasAvailableSubCommands() {
			var subs []string
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() {
					subs = append(subs, c.Name())
				}
			}
			return usagef("unknown command %q for %q (its subcommands: %s)", args[0], cmd.CommandPath(), strings.Join(subs, ", "))
		}
		return usagef("%s takes no arguments", name)
	}
}
