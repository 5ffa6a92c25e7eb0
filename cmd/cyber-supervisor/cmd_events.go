package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func newEventsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "events JOB",
		Short:   "Print a job's transitions with time and reason",
		GroupID: groupJobs,
		Args:    exactArgs(1, "events needs exactly one JOB id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dm, err := a.dialDaemon()
			if err != nil {
				return a.report("events", nil, err, nil)
			}
			ev, err := dm.Events(cmd.Context(), args[0])
			if err != nil {
				return a.report("events", nil, dm.err(err), nil)
			}
			return a.report("events", newEventViews(ev), nil, func() { printEvents(a.stdout, ev) })
		},
	}
}

func printEvents(w io.Writer, ev []store.Event) {
	for _, e := range ev {
		att := ""
		if e.Attempt != 0 {
			att = fmt.Sprintf(" attempt %d", e.Attempt)
		}
		fmt.Fprintf(w, "%s%s %s → %s: %s\n", e.Time.Format(time.RFC3339Nano), att, orDash(string(e.From)), e.To, e.Reason)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
