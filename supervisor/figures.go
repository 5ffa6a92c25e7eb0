package supervisor

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// figures are the overview's numbers, kept as jobs move rather than
// counted per request (docs/dashboard-data.md): counts by state and the
// queued jobs' submission times, taken once from a scan of the store and
// then moved by every committed write of this daemon (figures_tx.go);
// throughput and failures in fixed rings of time buckets; latencies in
// fixed rings of recent samples. What they hold is bounded: the rings
// are fixed, the failure codes are the error table's, the queued jobs are
// the queue's (bounded by admission) and the attempts under way at most
// maxAttempts.
type figures struct {
	mu           sync.Mutex
	countedSince time.Time
	counts       map[lifecycle.State]int64
	queued       map[string]time.Time // job in state queued → its submission
	hour, day    *bucketRing
	admission    *sampleRing
	run, verify  *sampleRing
	// attempts: when each running attempt started, or, once it has
	// produced its result, when it did (the start of its run's and of its
	// verification's latency); until it is verified or ends.
	attempts map[attemptKey]time.Time
}

type attemptKey struct {
	job string
	n   uint32
}

// The latency window: the last latencySamples samples of the last
// latencyWindow. maxAttempts bounds the attempts under way that figures
// time (a daemon runs at most its slots at once, but an attempt that
// ends where this daemon does not see it, on another host of a cluster,
// is only forgotten when the bound is met: then new ones go untimed).
const (
	latencyWindow  = time.Hour
	latencySamples = 1000
	maxAttempts    = 4096
)

func newFigures() *figures {
	return &figures{
		counts: map[lifecycle.State]int64{}, queued: map[string]time.Time{},
		hour: newBucketRing(time.Minute, 60), day: newBucketRing(time.Hour, 24),
		admission: newSampleRing(latencySamples), run: newSampleRing(latencySamples), verify: newSampleRing(latencySamples),
		attempts: map[attemptKey]time.Time{},
	}
}

// jobChange is one job's move in a committed write: from "" for a job
// created, to "" for one removed. At is when it moved (the record's
// Updated).
type jobChange struct {
	id       string
	from, to lifecycle.State
	created  time.Time
	at       time.Time
	code     protocol.Code
}

// attemptChange is an attempt's move to state to, at (its event).
type attemptChange struct {
	key attemptKey
	to  lifecycle.State
	at  time.Time
}

// failureState says whether a job that ends in st failed: without a
// result, not on somebody's decision (a cancel is not a failure).
func failureState(st lifecycle.State) bool {
	return st == lifecycle.Failed || st == lifecycle.Rejected || st == lifecycle.Unknown
}

// failureCode is the code a failure is counted under: its error's when
// that is a code of the table, else internal_error (a job that ended
// without one, or with a code this build does not know: the table bounds
// what figures keep).
func failureCode(e *protocol.Error) protocol.Code {
	if e == nil || !e.Code.Known() {
		return protocol.CodeInternalError
	}
	return e.Code
}

// apply moves the figures by one committed write's changes.
func (f *figures) apply(jobs []jobChange, attempts []attemptChange) {
	if len(jobs) == 0 && len(attempts) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range jobs {
		f.moveJob(c)
	}
	for _, c := range attempts {
		f.moveAttempt(c)
	}
}

func (f *figures) moveJob(c jobChange) {
	if c.from == c.to {
		return
	}
	if c.from != "" {
		f.counts[c.from]--
	}
	if c.to != "" {
		f.counts[c.to]++
	}
	if c.to == lifecycle.Queued {
		f.queued[c.id] = c.created
	} else if c.from == lifecycle.Queued {
		delete(f.queued, c.id)
	}
	switch {
	case c.to == lifecycle.Accepted:
		f.hour.accepted(c.at)
		f.day.accepted(c.at)
		f.admission.add(c.at, c.at.Sub(c.created))
	case failureState(c.to):
		f.hour.failed(c.at, c.code)
		f.day.failed(c.at, c.code)
	}
}

func (f *figures) moveAttempt(c attemptChange) {
	since, ok := f.attempts[c.key]
	switch c.to {
	case lifecycle.Running:
		if len(f.attempts) < maxAttempts {
			f.attempts[c.key] = c.at
		}
		return
	case lifecycle.Produced:
		if ok {
			f.run.add(c.at, c.at.Sub(since))
			f.attempts[c.key] = c.at
		}
		return
	case lifecycle.Verified:
		if ok {
			f.verify.add(c.at, c.at.Sub(since))
		}
	}
	delete(f.attempts, c.key)
}

// rebuild takes the counts, the queued jobs and the series from one walk
// over every job (each), made at now: a terminal job's last write
// (Updated) is its end. The latencies of runs and verifications, which
// the job records do not hold, are kept as they were.
func (f *figures) rebuild(now time.Time, each func(fn func(*store.Job) bool) error) error {
	counts, queued := map[lifecycle.State]int64{}, map[string]time.Time{}
	hour, day := newBucketRing(time.Minute, 60), newBucketRing(time.Hour, 24)
	var admitted []sample
	err := each(func(j *store.Job) bool {
		counts[j.State]++
		switch {
		case j.State == lifecycle.Queued:
			queued[j.ID] = j.Created
		case j.State == lifecycle.Accepted:
			hour.accepted(j.Updated)
			day.accepted(j.Updated)
			if now.Sub(j.Updated) < latencyWindow {
				admitted = append(admitted, sample{at: j.Updated, d: j.Updated.Sub(j.Created)})
				if len(admitted) >= 4*latencySamples {
					admitted = latest(admitted, latencySamples)
				}
			}
		case failureState(j.State):
			code := failureCode(j.Error)
			hour.failed(j.Updated, code)
			day.failed(j.Updated, code)
		}
		return true
	})
	if err != nil {
		return err
	}
	admission := newSampleRing(latencySamples)
	for _, s := range latest(admitted, latencySamples) {
		admission.add(s.at, s.d)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.countedSince, f.counts, f.queued, f.hour, f.day, f.admission = now, counts, queued, hour, day, admission
	return nil
}

// latest is the n most recent samples, oldest first.
func latest(s []sample, n int) []sample {
	sort.Slice(s, func(i, j int) bool { return s[i].at.Before(s[j].at) })
	if len(s) > n {
		s = slices.Clone(s[len(s)-n:])
	}
	return s
}

// read fills the overview's figures as of now.
func (f *figures) read(o *Overview, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o.CountedSince = f.countedSince
	o.Jobs = make(map[lifecycle.State]uint64, len(f.counts))
	for st, n := range f.counts {
		if n > 0 {
			o.Jobs[st] = uint64(n)
		}
	}
	for _, created := range f.queued {
		if o.OldestQueued.IsZero() || created.Before(o.OldestQueued) {
			o.OldestQueued = created
		}
	}
	o.LastHour, o.LastDay = f.hour.series(now), f.day.series(now)
	o.Latency = Latencies{Window: latencyWindow, MaxSamples: latencySamples,
		Admission: f.admission.percentiles(now), Run: f.run.percentiles(now), Verify: f.verify.percentiles(now)}
}
