package supervisor

import (
	"slices"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// bucketRing counts events in n buckets of step each, the last n steps:
// a bucket is reused for a later step once its own has left the window,
// so the ring's memory never grows.
type bucketRing struct {
	step  time.Duration
	slots []bucket
}

type bucket struct {
	num      int64 // the step this bucket counts (unix time / step)
	accepted uint64
	failures map[protocol.Code]uint64
}

func newBucketRing(step time.Duration, n int) *bucketRing {
	r := &bucketRing{step: step, slots: make([]bucket, n)}
	for i := range r.slots {
		r.slots[i].num = -1
	}
	return r
}

// at is the bucket of time t, nil when t is older than what the ring
// holds in its slot.
func (r *bucketRing) at(t time.Time) *bucket {
	num := t.UnixNano() / int64(r.step)
	b := &r.slots[int(num%int64(len(r.slots)))]
	switch {
	case b.num > num:
		return nil
	case b.num < num:
		*b = bucket{num: num}
	}
	return b
}

func (r *bucketRing) accepted(t time.Time) {
	if b := r.at(t); b != nil {
		b.accepted++
	}
}

func (r *bucketRing) failed(t time.Time, code protocol.Code) {
	if b := r.at(t); b != nil {
		if b.failures == nil {
			b.failures = map[protocol.Code]uint64{}
		}
		b.failures[code]++
	}
}

// series is the ring's last n steps up to now's, oldest first.
func (r *bucketRing) series(now time.Time) Series {
	n := len(r.slots)
	last := now.UnixNano() / int64(r.step)
	first := last - int64(n) + 1
	s := Series{Start: time.Unix(0, first*int64(r.step)).UTC(), Step: r.step, Accepted: make([]uint64, n)}
	rows := map[protocol.Code]int{}
	for i := range n {
		b := &r.slots[int((first+int64(i))%int64(n))]
		if b.num != first+int64(i) {
			continue
		}
		s.Accepted[i] = b.accepted
		for code, c := range b.failures {
			row, ok := rows[code]
			if !ok {
				row = len(s.Failures)
				rows[code] = row
				s.Failures = append(s.Failures, CodeCounts{Code: code, Counts: make([]uint64, n)})
			}
			s.Failures[row].Counts[i] += c
			s.Failures[row].Total += c
		}
	}
	slices.SortFunc(s.Failures, func(a, b CodeCounts) int {
		if a.Total != b.Total {
			return int(b.Total) - int(a.Total)
		}
		return compareCodes(a.Code, b.Code)
	})
	return s
}

func compareCodes(a, b protocol.Code) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sampleRing keeps the last len samples of a duration.
type sampleRing struct {
	s    []sample
	next int
	n    int
}

type sample struct {
	at time.Time
	d  time.Duration
}

func newSampleRing(n int) *sampleRing { return &sampleRing{s: make([]sample, n)} }

func (r *sampleRing) add(at time.Time, d time.Duration) {
	if d < 0 {
		d = 0 // a clock stepped back between the two times
	}
	r.s[r.next] = sample{at: at, d: d}
	r.next = (r.next + 1) % len(r.s)
	r.n = min(r.n+1, len(r.s))
}

// percentiles of the samples of the last latencyWindow before now
// (nearest rank).
func (r *sampleRing) percentiles(now time.Time) Percentiles {
	ds := make([]time.Duration, 0, r.n)
	for _, s := range r.s[:r.n] {
		if now.Sub(s.at) < latencyWindow {
			ds = append(ds, s.d)
		}
	}
	if len(ds) == 0 {
		return Percentiles{}
	}
	slices.Sort(ds)
	rank := func(p int) time.Duration { return ds[(len(ds)*p+99)/100-1] }
	return Percentiles{Samples: len(ds), P50: rank(50), P95: rank(95)}
}
