package supervisor

import (
	"context"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Overview is what the daemon knows of all its jobs at once: the
// dashboard's first page (docs/dashboard-data.md).
type Overview struct {
	Time time.Time
	// Jobs counts the store's jobs by state; CountedSince is when they
	// were last taken from a full scan (since then they follow writes).
	Jobs         map[lifecycle.State]uint64
	CountedSince time.Time
	// LastHour: 60 one-minute buckets; LastDay: 24 one-hour buckets.
	LastHour, LastDay Series
	// QueueDepth is the ready queue's length; OldestQueued the submission
	// time of the oldest job in state queued (zero: none).
	QueueDepth   int
	OldestQueued time.Time
	Latency      Latencies
	// SlotsInUse of Slots: the attempts this daemon runs now.
	SlotsInUse, Slots int
	Host, Boot        string
	Started           time.Time
	// Store is the job store's driver: bbolt or etcd.
	Store string
}

// Series is a run of Step-long buckets beginning at Start, the oldest
// first: the jobs accepted in each, and the jobs that ended failed,
// rejected or unknown by error code.
type Series struct {
	Start    time.Time
	Step     time.Duration
	Accepted []uint64
	Failures []CodeCounts
}

// CodeCounts is one error code's failures per bucket, and their sum.
type CodeCounts struct {
	Code   protocol.Code
	Counts []uint64
	Total  uint64
}

// Latencies are percentiles over at most MaxSamples samples of the last
// Window: a job's submission to its acceptance (Admission), an attempt's
// start to its result (Run) and its result to its verification (Verify).
type Latencies struct {
	Window      time.Duration
	MaxSamples  int
	Admission   Percentiles
	Run, Verify Percentiles
}

// Percentiles of Samples durations.
type Percentiles struct {
	Samples  int
	P50, P95 time.Duration
}

// Overview of every job.
func (s *Supervisor) Overview(ctx context.Context) (*Overview, error) {
	o := &Overview{Time: s.now(), Jobs: map[lifecycle.State]uint64{}, Slots: s.cfg.Slots, Store: "bbolt"}
	if s.cluster != nil {
		o.Store = "etcd"
	}
	id := s.ident()
	o.Host, o.Boot, o.Started = id.host, id.boot, s.startedAt
	err := s.view(ctx, "overview", func(tx store.Tx) error {
		n, err := tx.QueueLen()
		if err != nil {
			return err
		}
		o.QueueDepth = n
		return tx.ForEachJob(func(j *store.Job) bool {
			o.Jobs[j.State]++
			return true
		})
	})
	if err != nil {
		return nil, err
	}
	o.CountedSince = o.Time
	s.mu.Lock()
	o.SlotsInUse = len(s.active)
	s.mu.Unlock()
	return o, nil
}
