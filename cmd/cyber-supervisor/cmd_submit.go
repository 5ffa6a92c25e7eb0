package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

func newSubmitCmd(a *app) *cobra.Command {
	var (
		jf   jobFlags
		wait bool
	)
	cmd := &cobra.Command{
		Use:   "submit INPUT",
		Short: "Submit a job to the daemon",
		Long: `Submit a job to the daemon and print its id. With --wait, follow it
(progress on stderr) and print its verified result like run; Ctrl-C or
SIGTERM then stops waiting and leaves the job running (exit 130).

` + inputHelp,
		GroupID: groupJobs,
		Args:    exactArgs(1, "submit needs exactly one INPUT (.nox or bundle .json)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := jf.check(); err != nil {
				return err
			}
			spec, err := jf.spec(args[0], a.home)
			if err != nil {
				return a.report("submit", nil, err, nil)
			}
			dm, err := a.dialDaemon()
			if err != nil {
				return a.report("submit", nil, err, nil)
			}
			if wait {
				return a.runThrough(cmd.Context(), dm, "submit", spec, &jf, false)
			}
			rep, err := submitToDaemon(cmd.Context(), dm, spec, &jf)
			if err != nil {
				return a.report("submit", nil, err, nil)
			}
			view := apitypes.Submitted{JobID: rep.Job.JobID, State: rep.Job.State, Created: rep.Created}
			return a.report("submit", view, nil, func() { fmt.Fprintln(a.stdout, rep.Job.JobID) })
		},
	}
	jf.register(cmd.Flags())
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the result (progress on stderr)")
	return cmd
}
