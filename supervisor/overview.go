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

// clusterRecount is how stale the counts of a daemon on a shared store
// may grow: the other hosts' writes reach them only through a new scan,
// begun in the background by an overview that finds them older.
var clusterRecount = time.Minute

// Overview of every job: the figures this daemon keeps, the queue's
// length and the slots in use. It reads the store for the queue only
// (bounded by admission); a supervisor that keeps no figures (opened for
// maintenance) takes them from one scan.
func (s *Supervisor) Overview(ctx context.Context) (*Overview, error) {
	now := s.now()
	o := &Overview{Time: now, Slots: s.cfg.Slots, Store: s.StoreDriver(), Started: s.startedAt}
	id := s.ident()
	o.Host, o.Boot = id.host, id.boot
	f := s.figures
	if f == nil {
		var err error
		if f, err = s.figuresByScan(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.view(ctx, "overview: the queue", func(tx store.Tx) error {
		n, err := tx.QueueLen()
		o.QueueDepth = n
		return err
	}); err != nil {
		return nil, err
	}
	f.read(o, now)
	if s.cluster != nil && s.figures != nil && now.Sub(o.CountedSince) > clusterRecount && s.recounting.CompareAndSwap(false, true) {
		go func() {
			defer s.recounting.Store(false)
			if err := s.recount(context.WithoutCancel(ctx)); err != nil {
				s.log.Warn("overview: counting the shared store's jobs failed; the counts stay as they were", "err", err)
			}
		}()
	}
	s.mu.Lock()
	o.SlotsInUse = len(s.active)
	s.mu.Unlock()
	return o, nil
}

// StoreDriver names the store this supervisor runs on: "bbolt" (its
// home's own) or "etcd" (a cluster's).
func (s *Supervisor) StoreDriver() string {
	if s.cluster != nil {
		return "etcd"
	}
	return "bbolt"
}

// figuresByScan are figures taken from one scan of the store, for a
// supervisor that keeps none.
func (s *Supervisor) figuresByScan(ctx context.Context) (*figures, error) {
	f := newFigures()
	err := s.view(ctx, "overview: count jobs", func(tx store.Tx) error { return f.rebuild(s.now(), tx.ForEachJob) })
	return f, err
}

// recount takes the figures from one scan of the store.
func (s *Supervisor) recount(ctx context.Context) error {
	if s.figures == nil {
		return nil
	}
	return s.view(ctx, "count jobs for the overview", func(tx store.Tx) error {
		return s.figures.rebuild(s.now(), tx.ForEachJob)
	})
}
