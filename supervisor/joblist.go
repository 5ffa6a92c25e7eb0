package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

var (
	// ErrInvalidCursor: a list's cursor this daemon did not hand out, or
	// handed out for other filters.
	ErrInvalidCursor = errors.New("invalid cursor")
	// ErrAmbiguousJob: more than one job's id starts with the prefix.
	ErrAmbiguousJob = errors.New("ambiguous job id prefix")
)

// The bounds of a page of ListJobs.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
	// PageScanBudget is the most jobs one page reads, whatever it keeps:
	// a filter that matches rarely answers a short page (even an empty
	// one) with a cursor to go on rather than walking the whole store.
	PageScanBudget = 500
)

// JobQuery filters and pages ListJobs. Every filter is optional; they
// combine with "and". Jobs come newest first (submission order).
type JobQuery struct {
	State     lifecycle.State
	Operation string
	Code      protocol.Code
	// Program is a program's particle, hex.
	Program string
	// Since ≤ the job's submission time < Until (each ignored when zero).
	Since, Until time.Time
	// Cursor is a page's Next ("": from the newest job).
	Cursor string
	// Limit is the most jobs the page holds (0: DefaultPageLimit).
	Limit int
}

// JobPage is one page: its jobs, the cursor of the next page ("" at the
// end), and how many jobs the page read to find them.
type JobPage struct {
	Jobs    []*store.JobSummary
	Next    string
	Scanned int
}

// ListJobs is one page of the jobs q selects, newest first, as
// summaries. A page walks the submitted index from the cursor (a seek),
// reading each job's summary only, keeping the jobs that match, and stops
// at the limit or after PageScanBudget jobs: never a scan of the whole
// store.
func (s *Supervisor) ListJobs(ctx context.Context, q JobQuery) (*JobPage, error) {
	if err := q.check(); err != nil {
		return nil, err
	}
	from, err := q.start()
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultPageLimit
	}
	page := &JobPage{Jobs: []*store.JobSummary{}}
	err = s.view(ctx, "list jobs", func(tx store.Tx) error {
		page.Jobs, page.Next, page.Scanned = page.Jobs[:0], "", 0
		var last uint64
		ended := true
		err := tx.ForEachSubmittedSummary(from, true, func(j *store.JobSummary) bool {
			if !q.Since.IsZero() && j.Created.Before(q.Since) {
				// Submission order is creation order: everything beyond
				// was submitted before Since.
				return false
			}
			if page.Scanned == s.scanBudget() || len(page.Jobs) == limit {
				ended = false
				return false
			}
			page.Scanned++
			last = j.Seq
			if q.matches(j) {
				page.Jobs = append(page.Jobs, j)
			}
			return true
		})
		if err == nil && !ended && last > 0 {
			page.Next = q.cursorAt(last - 1)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// scanBudget is PageScanBudget, or a test's.
func (s *Supervisor) scanBudget() int {
	if s.pageScan > 0 {
		return s.pageScan
	}
	return PageScanBudget
}

// check refuses a query no page can answer.
func (q *JobQuery) check() error {
	switch {
	case q.State != "" && !q.State.Valid():
		return protocol.Errorf(protocol.CodeInvalidJob, "state %s: not a job state", protocol.QuotePrefix(string(q.State)))
	case q.Limit < 0 || q.Limit > MaxPageLimit:
		return protocol.Errorf(protocol.CodeInvalidJob, "limit %d: want 1..%d", q.Limit, MaxPageLimit)
	case !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until):
		return protocol.Errorf(protocol.CodeInvalidJob, "since must be before until")
	}
	return nil
}

// matches applies the filters to one job.
func (q *JobQuery) matches(j *store.JobSummary) bool {
	return (q.State == "" || j.State == q.State) &&
		(q.Operation == "" || j.Operation == q.Operation) &&
		(q.Program == "" || j.Program == q.Program) &&
		(q.Code == "" || j.ErrorCode == q.Code) &&
		(q.Until.IsZero() || j.Created.Before(q.Until))
}

// FindJob is the id of the one job whose id is prefix or starts with it:
// unknown_job when none does, ambiguous_job when several do (and none is
// prefix itself). It reads at most two jobs.
func (s *Supervisor) FindJob(ctx context.Context, prefix string) (string, error) {
	if !protocol.ValidName(prefix) {
		return "", protocol.Errorf(protocol.CodeInvalidJob, "job id prefix %s: want 1-%d of [A-Za-z0-9._-], not starting with a dot",
			protocol.QuotePrefix(prefix), protocol.MaxTextBytes)
	}
	var found []string
	err := s.view(ctx, "find job "+protocol.QuotePrefix(prefix), func(tx store.Tx) error {
		found = found[:0]
		return tx.ForEachJobFrom(prefix, func(j *store.Job) bool {
			if !strings.HasPrefix(j.ID, prefix) {
				return false
			}
			found = append(found, j.ID)
			return len(found) < 2 && j.ID != prefix
		})
	})
	switch {
	case err != nil:
		return "", err
	case len(found) == 0:
		return "", fmt.Errorf("%w: no job id starts with %s", ErrUnknownJob, protocol.QuotePrefix(prefix))
	case len(found) > 1 && found[0] != prefix:
		return "", fmt.Errorf("%w: %s and %s both start with %s (give more of the id)", ErrAmbiguousJob,
			protocol.QuotePrefix(found[0]), protocol.QuotePrefix(found[1]), protocol.QuotePrefix(prefix))
	}
	return found[0], nil
}
