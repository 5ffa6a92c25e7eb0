package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// run executes one job with the embedded store and an isolated worker, and
// prints the verified result.
func (c *cli) run(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var (
		jf jobFlags
		d  daemonFlags
	)
	jf.register(fs)
	d.register(fs)
	d.logLevel = "warn"
	d.pool = 0 // one job: a warm worker would only add start-up work
	pos, ok := parseFlags(fs, args, c.stderr)
	if !ok {
		return exitUsage
	}
	if len(pos) != 1 {
		return usageErr(c.stderr, "run needs exactly one INPUT (.nox or bundle .json)")
	}
	spec, err := jf.spec(pos[0])
	if err != nil {
		return c.report(jf.format, "run", nil, err, nil)
	}
	log, err := d.logger(c)
	if err != nil {
		return usageErr(c.stderr, "%v", err)
	}
	if jf.format == "json" {
		log = slog.New(slog.DiscardHandler)
	}
	sup, home, err := d.open(ctx, c, log)
	if err != nil {
		return c.report(jf.format, "run", nil, err, nil)
	}
	defer sup.Close(context.Background())
	sup.Start()
	job, _, err := sup.Submit(ctx, supervisor.SubmitRequest{Spec: spec, Priority: int32(jf.priority), Retry: jf.retryPolicy()})
	if err != nil {
		return c.report(jf.format, "run", nil, err, nil)
	}
	st, err := c.follow(ctx, job.ID, jf.format == "human", func(ctx context.Context, seen string) (*supervisor.JobStatus, error) {
		return sup.Wait(ctx, job.ID, seen)
	})
	if err != nil {
		// Interrupted: cancel the job and report it.
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sup.Cancel(cctx, job.ID, "interrupted")
		if st, werr := sup.Wait(cctx, job.ID, ""); werr == nil {
			return c.finalReport(jf.format, "run", st, home)
		}
		return c.report(jf.format, "run", nil, protocol.Errorf(protocol.CodeCancelled, "interrupted"), nil)
	}
	return c.finalReport(jf.format, "run", st, home)
}

// follow waits for a job to end, showing state changes on stderr.
func (c *cli) follow(ctx context.Context, id string, progress bool, wait func(context.Context, string) (*supervisor.JobStatus, error)) (*supervisor.JobStatus, error) {
	start := time.Now()
	seen := ""
	for {
		st, err := wait(ctx, seen)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if s := string(st.Job.State); s != seen {
			seen = s
			if progress {
				fmt.Fprintf(c.stderr, "%s: %s (attempt %d, %.2fs)\n", id, s, st.Job.Attempts, time.Since(start).Seconds())
			}
		}
		if st.Job.State.Terminal() {
			return st, nil
		}
	}
}

// finalReport prints a finished job: its accepted result or its error.
func (c *cli) finalReport(format, command string, st *supervisor.JobStatus, home string) int {
	j := st.Job
	if j.State == lifecycle.Accepted {
		return c.report(format, command, json.RawMessage(j.Result), nil, func() { c.printResult(j.Result, supervisorSandboxes(home)) })
	}
	err := error(j.Error)
	if j.Error == nil {
		err = protocol.Errorf(protocol.CodeInternalError, "job ended %s", j.State)
	}
	return c.report(format, command, nil, err, nil)
}

func supervisorSandboxes(home string) string {
	if home == "" {
		return ""
	}
	return home + "/sandboxes"
}
