package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// stateNames are the job states' names, for the --state flags.
func stateNames() []string {
	out := make([]string, 0, len(lifecycle.States))
	for _, s := range lifecycle.States {
		out = append(out, string(s))
	}
	return out
}

// listWatch is list --watch's watch, started before the list is read
// (what changes meanwhile is reported after it): a line for each job
// submitted or changed (in state, unless it is "").
func (a *app) listWatch(ctx context.Context, dm *daemon, state string) (*jobWatch, error) {
	w := &jobWatch{a: a, changed: func(_ context.Context, _ *daemon, j *apitypes.Job) error {
		if state == "" || string(j.State) == state {
			fmt.Fprintf(a.stdout, "%s  %s  %s  %s  %d\n", j.Updated.Format(time.RFC3339), j.JobID, j.State, j.Operation, j.Attempts)
		}
		return nil
	}}
	return w, w.start(ctx, dm)
}

// followAll is events --follow --all (state ""), or --state: the new
// events of every job (into or out of state), each led by its job's
// id, until ctx ends. A job's events from before the command began are
// not printed.
func (a *app) followAll(ctx context.Context, dm *daemon, state string) error {
	start := time.Now()
	last := map[string]uint64{}
	w := &jobWatch{a: a, changed: func(ctx context.Context, dm *daemon, j *apitypes.Job) error {
		seen, known := last[j.JobID]
		ev, err := dm.EventsAfter(ctx, j.JobID, seen, false)
		if err != nil {
			return err
		}
		for _, e := range ev {
			last[j.JobID] = max(last[j.JobID], e.Seq)
			if !known && e.Time.Before(start) {
				continue // history of a job that was there before
			}
			if state != "" && string(e.From) != state && string(e.To) != state {
				continue
			}
			var line strings.Builder
			printEvents(&line, []apitypes.Event{e})
			fmt.Fprintf(a.stdout, "%s %s", j.JobID, line.String())
		}
		return nil
	}}
	if err := w.start(ctx, dm); err != nil {
		return a.report("events", nil, dm.err(err), nil)
	}
	fmt.Fprintln(a.stderr, "following the new events of every job (Ctrl-C ends)")
	if err := w.run(ctx, dm); err != nil {
		return a.report("events", nil, err, nil)
	}
	return nil
}
