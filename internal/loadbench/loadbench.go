// Package loadbench drives the end-to-end job benchmarks of supervisor/
// and integration/: rounds of jobs with a fixed number in flight, and the
// latency percentiles they report.
package loadbench

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

// Rounds runs b.N rounds of perRound jobs, at most inFlight at a time, and
// returns the latencies of the jobs that succeeded. job(round, i) runs one
// job, reports its own failures to b, and returns its latency and whether
// it succeeded.
func Rounds(b *testing.B, perRound, inFlight int, job func(round, i int) (time.Duration, bool)) []time.Duration {
	var (
		mu  sync.Mutex
		lat []time.Duration
	)
	for round := 0; round < b.N; round++ {
		var wg sync.WaitGroup
		sem := make(chan struct{}, inFlight)
		for i := range perRound {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if d, ok := job(round, i); ok {
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	return lat
}

// ReportLatency reports the given percentiles (0.5 → "p50-ms") of lat in
// milliseconds.
func ReportLatency(b *testing.B, lat []time.Duration, ps ...float64) {
	if len(lat) == 0 {
		return
	}
	s := sorted(lat)
	for _, p := range ps {
		b.ReportMetric(Millis(nearestRank(s, p)), fmt.Sprintf("p%d-ms", int(math.Round(p*100))))
	}
}

// Percentile is the nearest-rank p-quantile of lat (0 for none); lat is
// left as it was.
func Percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return nearestRank(sorted(lat), p)
}

func sorted(lat []time.Duration) []time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	return s
}

// nearestRank is the p-quantile of the sorted, non-empty s.
func nearestRank(s []time.Duration, p float64) time.Duration {
	return s[min(max(int(math.Ceil(p*float64(len(s))))-1, 0), len(s)-1)]
}

// Millis is d in milliseconds, to microsecond precision.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Median is the median of x (the mean of the two middle values for an
// even count), 0 for none; x is left as it was.
func Median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(x))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
