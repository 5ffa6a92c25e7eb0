package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
)

func (c *cli) client() (*api.Client, string, error) {
	home, err := supervisor.ResolveHome(c.home)
	if err != nil {
		return nil, "", err
	}
	return api.NewClient(supervisor.SocketPath(home)), home, nil
}

// simple parses flags of a command taking one JOB (or none).
func (c *cli) simple(name string, args []string, wantJob bool, extra func(*flag.FlagSet)) (string, string, bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	format := fs.String("format", "human", "output: human or json (the cyber/cli/v1 envelope)")
	if extra != nil {
		extra(fs)
	}
	pos, ok := parseFlags(fs, args, c.stderr)
	if !ok {
		return "", "", false
	}
	if wantJob && len(pos) != 1 || !wantJob && len(pos) != 0 {
		if wantJob {
			usageErr(c.stderr, "%s needs exactly one JOB id", name)
		} else {
			usageErr(c.stderr, "%s takes no arguments", name)
		}
		return "", "", false
	}
	job := ""
	if wantJob {
		job = pos[0]
	}
	return job, *format, true
}

func (c *cli) submit(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	var jf jobFlags
	jf.register(fs)
	wait := fs.Bool("wait", false, "wait for the result (progress on stderr)")
	pos, ok := parseFlags(fs, args, c.stderr)
	if !ok {
		return exitUsage
	}
	if len(pos) != 1 {
		return usageErr(c.stderr, "submit needs exactly one INPUT (.nox or bundle .json)")
	}
	spec, err := jf.spec(pos[0])
	if err != nil {
		return c.report(jf.format, "submit", nil, err, nil)
	}
	cl, home, err := c.client()
	if err != nil {
		return c.report(jf.format, "submit", nil, err, nil)
	}
	rep, err := cl.Submit(ctx, spec, int32(jf.priority), jf.retryPolicy())
	if err != nil {
		return c.report(jf.format, "submit", nil, err, nil)
	}
	if !*wait {
		return c.report(jf.format, "submit", map[string]any{"job": rep.Job.ID, "state": rep.Job.State, "created": rep.Created}, nil,
			func() { fmt.Fprintln(c.stdout, rep.Job.ID) })
	}
	st, err := c.follow(ctx, rep.Job.ID, jf.format == "human", func(ctx context.Context, seen string) (*supervisor.JobStatus, error) {
		return cl.Wait(ctx, rep.Job.ID, seen)
	})
	if err != nil {
		return c.report(jf.format, "submit", nil, err, nil)
	}
	return c.finalReport(jf.format, "submit", st, home)
}

func (c *cli) status(ctx context.Context, args []string) int {
	job, format, ok := c.simple("status", args, true, nil)
	if !ok {
		return exitUsage
	}
	cl, _, err := c.client()
	if err != nil {
		return c.report(format, "status", nil, err, nil)
	}
	st, err := cl.Status(ctx, job)
	if err != nil {
		return c.report(format, "status", nil, err, nil)
	}
	view := statusView(st)
	return c.report(format, "status", view, nil, func() {
		fmt.Fprintf(c.stdout, "job %s: %s (op %s, %d attempt(s))\n", st.Job.ID, st.Job.State, st.Job.Operation, st.Job.Attempts)
		if st.Job.Error != nil {
			fmt.Fprintf(c.stdout, "error: %s: %s\n", st.Job.Error.Code, st.Job.Error.Message)
		}
		for _, a := range st.Attempts {
			line := fmt.Sprintf("  attempt %d: %s", a.N, a.State)
			if a.Error != nil {
				line += " (" + string(a.Error.Code) + ")"
			}
			fmt.Fprintln(c.stdout, line)
		}
	})
}

// statusView is the job and its attempts; the job record carries no
// payload (the frozen spec has its own bucket, docs/store.md).
func statusView(st *supervisor.JobStatus) map[string]any {
	return map[string]any{"job": st.Job, "attempts": st.Attempts}
}

func (c *cli) list(ctx context.Context, args []string) int {
	var state *string
	_, format, ok := c.simple("list", args, false, func(fs *flag.FlagSet) {
		state = fs.String("state", "", "only jobs in this state")
	})
	if !ok {
		return exitUsage
	}
	cl, _, err := c.client()
	if err != nil {
		return c.report(format, "list", nil, err, nil)
	}
	jobs, err := cl.List(ctx, *state)
	if err != nil {
		return c.report(format, "list", nil, err, nil)
	}
	rows := make([]map[string]any, 0, len(jobs))
	for _, j := range jobs {
		rows = append(rows, map[string]any{"job": j.ID, "state": j.State, "op": j.Operation, "attempts": j.Attempts, "updated": j.Updated})
	}
	return c.report(format, "list", rows, nil, func() {
		tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "JOB\tSTATE\tOP\tATTEMPTS\tUPDATED")
		for _, j := range jobs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", j.ID, j.State, j.Operation, j.Attempts, j.Updated.Format(time.RFC3339))
		}
		tw.Flush()
	})
}

func (c *cli) cancel(ctx context.Context, args []string) int {
	var reason *string
	job, format, ok := c.simple("cancel", args, true, func(fs *flag.FlagSet) {
		reason = fs.String("reason", "", "why (recorded in the events)")
	})
	if !ok {
		return exitUsage
	}
	cl, _, err := c.client()
	if err != nil {
		return c.report(format, "cancel", nil, err, nil)
	}
	st, err := cl.Cancel(ctx, job, *reason)
	if err != nil {
		return c.report(format, "cancel", nil, err, nil)
	}
	view := map[string]any{"job": job, "requested": st.Requested, "acknowledged": st.Acknowledged, "already_done": st.AlreadyDone}
	return c.report(format, "cancel", view, nil, func() {
		switch {
		case st.AlreadyDone:
			fmt.Fprintf(c.stdout, "%s had already ended (%s)\n", job, st.Job.State)
		case st.Acknowledged:
			fmt.Fprintf(c.stdout, "%s: cancellation acknowledged by the worker\n", job)
		default:
			fmt.Fprintf(c.stdout, "%s: cancellation requested\n", job)
		}
	})
}

func (c *cli) result(ctx context.Context, args []string) int {
	job, format, ok := c.simple("result", args, true, nil)
	if !ok {
		return exitUsage
	}
	cl, home, err := c.client()
	if err != nil {
		return c.report(format, "result", nil, err, nil)
	}
	raw, err := cl.Result(ctx, job)
	if err != nil {
		return c.report(format, "result", nil, err, nil)
	}
	return c.report(format, "result", json.RawMessage(raw), nil, func() { c.printResult(raw, supervisorSandboxes(home)) })
}

func (c *cli) events(ctx context.Context, args []string) int {
	job, format, ok := c.simple("events", args, true, nil)
	if !ok {
		return exitUsage
	}
	cl, _, err := c.client()
	if err != nil {
		return c.report(format, "events", nil, err, nil)
	}
	ev, err := cl.Events(ctx, job)
	if err != nil {
		return c.report(format, "events", nil, err, nil)
	}
	return c.report(format, "events", ev, nil, func() {
		for _, e := range ev {
			att := ""
			if e.Attempt != 0 {
				att = fmt.Sprintf(" attempt %d", e.Attempt)
			}
			fmt.Fprintf(c.stdout, "%s%s %s → %s: %s\n", e.Time.Format(time.RFC3339Nano), att, orDash(string(e.From)), e.To, e.Reason)
		}
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *cli) capabilities(ctx context.Context, args []string) int {
	_, format, ok := c.simple("capabilities", args, false, nil)
	if !ok {
		return exitUsage
	}
	cl, _, err := c.client()
	if err != nil {
		return c.report(format, "capabilities", nil, err, nil)
	}
	raw, err := cl.Capabilities(ctx)
	if err != nil {
		return c.report(format, "capabilities", nil, err, nil)
	}
	return c.report(format, "capabilities", raw, nil, func() {
		var v any
		json.Unmarshal(raw, &v)
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintln(c.stdout, string(b))
	})
}
