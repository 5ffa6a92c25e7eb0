package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// waitFunc waits until the job is in another state than seen (or has
// ended): the embedded supervisor's Wait or the daemon's.
type waitFunc func(ctx context.Context, seen string) (*apitypes.JobStatus, error)

// follow waits for a job to end, showing each state of each attempt.
func follow(ctx context.Context, wait waitFunc, p *progress) (*apitypes.JobStatus, error) {
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
// embedded store, run or submit --wait through the daemon). The job is
// sampled, not streamed: a state that began and ended between two samples
// (a job taken before the first sample, an attempt that failed and was
// retried meanwhile) is printed from the attempts' records, so the lines
// do not depend on how fast the job moved.
type progress struct {
	w     io.Writer // nil: quiet
	id    string
	start time.Time
	n     uint32 // the last attempt whose queued line was printed
	ran   bool   // attempt n's running line was printed
	last  string
}

func newProgress(w io.Writer, id string) *progress {
	return &progress{w: w, id: id, start: time.Now()}
}

func (p *progress) show(st *apitypes.JobStatus) {
	if p.w == nil {
		return
	}
	j := st.Job
	n := attemptOf(st)
	// Every attempt up to n was queued; one with a record was taken.
	for k := p.n + 1; k <= n; k++ {
		p.taken(st, p.n)
		p.queued(st, k)
	}
	if j.State == lifecycle.Queued {
		return
	}
	if j.State != lifecycle.Running {
		p.taken(st, n)
	}
	p.line(j.State, n, j.AttemptsAllowed)
}

// queued prints that attempt k waits in the queue: for a retry, with why
// the attempt before it ended.
func (p *progress) queued(st *apitypes.JobStatus, k uint32) {
	p.n, p.ran = k, false
	p.last = fmt.Sprintf("%s/%d", lifecycle.Queued, k)
	of := attemptsOf(st.Job.AttemptsAllowed)
	elapsed := time.Since(p.start).Seconds()
	if k == 1 {
		fmt.Fprintf(p.w, "%s: %s (attempt 1%s, %.2fs)\n", p.id, lifecycle.Queued, of, elapsed)
		return
	}
	why := ""
	if prev := attemptN(st, k-1); prev != nil {
		why = " " + string(prev.State)
		if prev.Error != nil {
			why += " (" + prev.Error.Error() + ")"
		}
	}
	fmt.Fprintf(p.w, "%s: attempt %d%s; queued for attempt %d%s (%.2fs)\n", p.id, k-1, why, k, of, elapsed)
}

// taken prints attempt k's running line if it was taken and the line is
// still missing.
func (p *progress) taken(st *apitypes.JobStatus, k uint32) {
	if k == p.n && !p.ran && attemptN(st, k) != nil {
		p.line(lifecycle.Running, k, st.Job.AttemptsAllowed)
	}
}

// line prints state s of attempt n unless it was the last line printed.
func (p *progress) line(s lifecycle.State, n, maxAttempts uint32) {
	key := fmt.Sprintf("%s/%d", s, n)
	if key == p.last {
		return
	}
	p.last = key
	if s == lifecycle.Running {
		p.ran = true
	}
	fmt.Fprintf(p.w, "%s: %s (attempt %d%s, %.2fs)\n", p.id, s, n, attemptsOf(maxAttempts), time.Since(p.start).Seconds())
}

// attemptsOf is " of N" when the job may run more than one attempt.
func attemptsOf(maxAttempts uint32) string {
	if maxAttempts > 1 {
		return fmt.Sprintf(" of %d", maxAttempts)
	}
	return ""
}

// attemptOf is the attempt the job's state is about: the one running or
// prepared, the next one while the job waits in the queue, else the last.
func attemptOf(st *apitypes.JobStatus) uint32 {
	j := st.Job
	if k := len(st.Attempts); k > 0 && !st.Attempts[k-1].State.Terminal() {
		return st.Attempts[k-1].N
	}
	if j.State == lifecycle.Queued {
		return j.Attempts + 1
	}
	return max(j.Attempts, 1)
}

func attemptN(st *apitypes.JobStatus, n uint32) *apitypes.Attempt {
	for i := range st.Attempts {
		if st.Attempts[i].N == n {
			return &st.Attempts[i]
		}
	}
	return nil
}
