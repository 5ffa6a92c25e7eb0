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
	minChunk  = 16
	maxChunks = 20000
)

// Compare runs oldF and newF for b.N operations each, alternating in
// chunks (newF(n) and oldF(n) must each perform n operations). It reports
// a low percentile (the 10th) of the chunk times per operation: newF's as
// ns/op, oldF's as old-ns/op, and their ratio as x-old (how many times
// faster the new one is). Other builds share the cores, and a chunk during
// which the process was descheduled or shared its core is slower by an
// arbitrary amount; the fastest chunks are the ones that ran alone, which
// is the figure that compares.
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
	mNew, mOld := percentile(tNew, 0.1), percentile(tOld, 0.1)
	b.ReportMetric(mNew, "ns/op")
	b.ReportMetric(mOld, "old-ns/op")
	if mNew > 0 {
		b.ReportMetric(mOld/mNew, "x-old")
	}
}

// percentile is the nearest-rank q-quantile of x (sorted in place).
func percentile(x []float64, q float64) float64 {
	if len(x) == 0 {
		return 0
	}
	slices.Sort(x)
	return x[int(q*float64(len(x)-1))]
}
