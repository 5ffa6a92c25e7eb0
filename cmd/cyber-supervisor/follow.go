package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// waitFunc waits until the job is in another state than seen (or has
// ended): the embedded supervisor's Wait or the daemon's.
type waitFunc func(ctx context.Context, seen string) (*supervisor.JobStatus, error)

// follow waits for a job to end, showing each state of each attempt.
func follow(ctx context.Context, wait waitFunc, p *progress) (*supervisor.JobStatus, error) {
	seen := ""
	for {
		st, err := wait(ctx, seen)
		if err != nil {
			return nil, err
		}
		p.show(st)
		if st.Job.State.Terminal() {
			return st, nil
		}
		seen = string(st.Job.State)
	}
}

// progress prints a job's states on stderr, one line per state of each
// attempt, numbered the same way whoever runs the job (run with the
// embedded store, run or submit --wait through the daemon).
type progress struct {
	w     io.Writer // nil: quiet
	id    string
	start time.Time
	last  string
}

func newProgress(w io.Writer, id string) *progress {
	return &progress{w: w, id: id, start: time.Now()}
}

func (p *progress) show(st *supervisor.JobStatus) {
	if p.w == nil {
		return
	}
	j := st.Job
	n := attemptOf(st)
	key := fmt.Sprintf("%s/%d", j.State, n)
	if key == p.last {
		return
	}
	p.last = key
	of := ""
	if j.Retry.MaxAttempts > 1 {
		of = fmt.Sprintf(" of %d", j.Retry.MaxAttempts)
	}
	elapsed := time.Since(p.start).Seconds()
	if j.State == lifecycle.Queued && n > 1 {
		// A retry: say why the attempt before ended.
		why := ""
		if prev := attemptN(st, n-1); prev != nil {
			why = " " + string(prev.State)
			if prev.Error != nil {
				why += " (" + prev.Error.Error() + ")"
			}
		}
		fmt.Fprintf(p.w, "%s: attempt %d%s; queued for attempt %d%s (%.2fs)\n", p.id, n-1, why, n, of, elapsed)
		return
	}
	fmt.Fprintf(p.w, "%s: %s (attempt %d%s, %.2fs)\n", p.id, j.State, n, of, elapsed)
}

// attemptOf is the attempt the job's state is about: the one running or
// prepared, the next one while the job waits in the queue, else the last.
func attemptOf(st *supervisor.JobStatus) uint32 {
	j := st.Job
	if k := len(st.Attempts); k > 0 && !st.Attempts[k-1].State.Terminal() {
		return st.Attempts[k-1].N
	}
	if j.State == lifecycle.Queued {
		return j.Attempts + 1
	}
	return max(j.Attempts, 1)
}

func attemptN(st *supervisor.JobStatus, n uint32) *store.Attempt {
	for _, a := range st.Attempts {
		if a.N == n {
			return a
		}
	}
	return nil
}
