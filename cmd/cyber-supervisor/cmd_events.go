package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

func newEventsCmd(a *app) *cobra.Command {
	var followFlag, all bool
	states := newEnum("", stateNames()...)
	cmd := &cobra.Command{
		Use:   "events JOB | events --follow (--all | --state S)",
		Short: "Print a job's transitions with time and reason",
		Long: `Print a job's transitions, each with its time, attempt and reason. With
--follow, keep printing new ones as they happen until the job has ended
(with --format json, one envelope with all of them once it has).

With --follow --all instead of a JOB, print the new transitions of every
job as they happen, each line led by its job's id, until interrupted
(Ctrl-C ends it, exit 0); with --follow --state S, only those into or
out of state S.`,
		GroupID: groupJobs,
		Args: func(cmd *cobra.Command, args []string) error {
			if all || states.value != "" {
				if len(args) != 0 || !followFlag {
					return usagef("events --all and --state take no JOB and need --follow")
				}
				if a.json() {
					return usagef("events --follow --all prints to a terminal; with --format json, follow GET /v1/changes")
				}
				return nil
			}
			return exactArgs(1, "events needs exactly one JOB id (or --follow --all)")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dm, err := a.dialReader()
			if err != nil {
				return a.report("events", nil, err, nil)
			}
			if len(args) == 0 {
				return a.followAll(cmd.Context(), dm, states.value)
			}
			var ev []apitypes.Event
			if followFlag {
				// The daemon may go while the job is followed (a restart):
				// the job is not lost, and the message says so.
				if ev, err = a.followEvents(cmd.Context(), dm, args[0]); err != nil {
					if cmd.Context().Err() != nil {
						// A signal stops the following, not the job.
						return a.report("events", nil, &leavingError{
							msg:  fmt.Sprintf("stopped following (signal); job %s goes on: `%s events --follow %s` follows it again", args[0], dm.cli, args[0]),
							left: apitypes.Left{JobID: args[0], Events: nonNilEvents(ev)}}, nil)
					}
					return a.report("events", nil, dm.followErr(err, args[0]), nil)
				}
			} else {
				ev, err = dm.Events(cmd.Context(), args[0])
				if err == nil && !a.json() {
					printEvents(a.stdout, ev)
				}
			}
			if err != nil {
				return a.report("events", nil, dm.err(err), nil)
			}
			return a.report("events", nonNilEvents(ev), nil, nil)
		},
	}
	cmd.Flags().BoolVarP(&followFlag, "follow", "f", false, "print new events as they happen, until the job has ended")
	cmd.Flags().BoolVar(&all, "all", false, "with --follow and no JOB: every job's new events, until interrupted")
	cmd.Flags().Var(states, "state", "with --follow and no JOB: the new events into or out of this state, until interrupted")
	return cmd
}

// followEvents prints (in human format) every event of the job as it
// comes, until the job has ended, and returns them all.
func (a *app) followEvents(ctx context.Context, dm *daemon, id string) ([]apitypes.Event, error) {
	var (
		all   []apitypes.Event
		after uint64
	)
	show := func(ev []apitypes.Event) {
		all = append(all, ev...)
		if len(ev) > 0 {
			after = ev[len(ev)-1].Seq
		}
		if !a.json() {
			printEvents(a.stdout, ev)
		}
	}
	for {
		ev, err := dm.EventsAfter(ctx, id, after, true)
		if err != nil {
			return all, err
		}
		show(ev)
		st, err := dm.Status(ctx, id)
		if err != nil {
			return all, err
		}
		if !st.Job.State.Terminal() && dm.readOnly {
			// Nothing moves a job on a home no daemon owns.
			return all, protocol.Errorf(protocol.CodeUnavailable, "job %s is %s and no daemon owns %s: its events so far are all there are until one starts (`%s serve`)",
				id, st.Job.State, dm.home, dm.cli)
		}
		if st.Job.State.Terminal() {
			// The last transition and its events commit together: one
			// more read has every event there will be.
			ev, err := dm.EventsAfter(ctx, id, after, false)
			if err != nil {
				return all, err
			}
			show(ev)
			return all, nil
		}
	}
}

// nonNilEvents is ev, [] for none.
func nonNilEvents(ev []apitypes.Event) []apitypes.Event {
	if ev == nil {
		return []apitypes.Event{}
	}
	return ev
}

func printEvents(w io.Writer, ev []apitypes.Event) {
	for _, e := range ev {
		att := ""
		if e.Attempt != 0 {
			att = fmt.Sprintf(" attempt %d", e.Attempt)
		}
		if e.Host != "" {
			att += " on " + e.Host
		}
		reason := afterState(string(e.To), e.Reason)
		if reason != "" {
			reason = ": " + reason
		}
		fmt.Fprintf(w, "%s%s %s → %s%s\n", e.Time.Format(time.RFC3339Nano), att, orDash(string(e.From)), e.To, reason)
	}
}

// afterState is a reason as it reads after the state it led to: without
// that state's word again when the reason is an error whose code is the
// state's name ("→ cancelled: testing", not "→ cancelled: cancelled:
// testing"), and "" when it is that word alone. The stored reason keeps
// the code.
func afterState(state, reason string) string {
	if state == "" {
		return reason
	}
	if reason == state {
		return ""
	}
	if rest, ok := strings.CutPrefix(reason, state+": "); ok {
		return rest
	}
	return reason
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
