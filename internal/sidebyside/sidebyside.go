// Package sidebyside measures a new implementation against the one it
// replaced inside one benchmark, so that their ratio comes from one run on
// the same (shared, noisy) machine rather than from two runs minutes apart.
package sidebyside

import (
	"slices"
	"testing"
	"time"
)

// Chunks: each side runs in chunks of at least minChunk operations,
// alternating, so both see the same machine load; at most maxChunks
// chunks are timed, which bounds the bookkeeping.
const (
	minChunk  = 64
	maxChunks = 2000
)

// Compare runs oldF and newF for b.N operations each, alternating in
// chunks (newF(n) and oldF(n) must each perform n operations). It reports
// the median chunk time per operation of newF as ns/op and of oldF as
// old-ns/op, and their ratio as x-old (how many times faster the new one
// is). The median, rather than the mean, keeps a chunk during which the
// process was descheduled — other builds share the cores — from counting.
func Compare(b *testing.B, oldF, newF func(n int)) {
	b.Helper()
	b.ReportAllocs()
	size := max(minChunk, (b.N+maxChunks-1)/maxChunks)
	tOld := make([]float64, 0, b.N/size+1)
	tNew := make([]float64, 0, b.N/size+1)
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(size, b.N-done)
		t0 := time.Now()
		newF(n)
		t1 := time.Now()
		oldF(n)
		t2 := time.Now()
		tNew = append(tNew, float64(t1.Sub(t0).Nanoseconds())/float64(n))
		tOld = append(tOld, float64(t2.Sub(t1).Nanoseconds())/float64(n))
		done += n
	}
	b.StopTimer()
	mNew, mOld := median(tNew), median(tOld)
	b.ReportMetric(mNew, "ns/op")
	b.ReportMetric(mOld, "old-ns/op")
	if mNew > 0 {
		b.ReportMetric(mOld/mNew, "x-old")
	}
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	slices.Sort(x)
	return x[len(x)/2]
}
