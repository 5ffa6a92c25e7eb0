package cert

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
)

// BenchmarkVerifyDigestAttacks verifies the digest attacks of issue #26
// (internal/hostile/digests.go) under the node bound of the smallest job
// that holds them, and reports per table node what the verification
// allocated (alloc-B/node) and its peak heap above the start (sampled
// every 100 µs: peak-heap-B/node), and the process's CPU per
// verification (cpu-ms, every thread, collections included), at
// GOMAXPROCS 1, 2 and 16 (set by each sub-benchmark: -cpu would not
// reach them). HOSTILE_DIGEST_SIZE=issue runs the
// issue's sizes (2^24 dense axis-0 steps over 146 nodes; 32,768 hashes
// of operands sharing a list of 524,288 pairs, 819,410 nodes; without
// it, the sizes of TestVerifyMemoryPerNode, for CI's one run of every
// benchmark). It uses nothing of the verifier but Verify and its table,
// so that scripts/bench-digests.sh can run it against an older one.
func BenchmarkVerifyDigestAttacks(b *testing.B) {
	axis, list, hashes := axisZeroDoublings, sharedListDoublings, sharedHashDoublings
	if os.Getenv("HOSTILE_DIGEST_SIZE") == "issue" {
		axis, list, hashes = hostile.AxisZeroDoublings, hostile.SharedListDoublings, hostile.SharedHashDoublings
	}
	for _, c := range []struct {
		name string
		raw  func() []byte
	}{
		{"axis-zero", func() []byte { return hostile.AxisZero(axis) }},
		{"shared-operand", func() []byte { return hostile.SharedOperand(list, hashes) }},
	} {
		raw := c.raw()
		for _, procs := range []int{1, 2, 16} {
			b.Run(fmt.Sprintf("%s/gomaxprocs=%d", c.name, procs), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				verifyDigestAttack(b, raw)
			})
		}
	}
}

// verifyDigestAttack is one sub-benchmark of BenchmarkVerifyDigestAttacks.
func verifyDigestAttack(b *testing.B, raw []byte) {
	st, err := ReadStatement(raw)
	if err != nil {
		b.Fatal(err)
	}
	exp := expectOf(st)
	nodes := benchTableSize(b, raw)
	var alloc, peak uint64
	var cpu time.Duration
	b.ResetTimer()
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		stop := sampleHeap()
		runtime.ReadMemStats(&before)
		c0 := processCPU()
		if _, _, err := Verify(context.Background(), raw, exp, Bounds{MaxNodes: nodes}); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - c0
		runtime.ReadMemStats(&after)
		peak += stop()
		alloc += after.TotalAlloc - before.TotalAlloc
	}
	n := float64(b.N) * float64(nodes)
	b.ReportMetric(float64(alloc)/n, "alloc-B/node")
	b.ReportMetric(float64(peak)/n, "peak-heap-B/node")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms")
	b.ReportMetric(float64(nodes), "nodes")
}

// benchTableSize is the size of a certificate's node table.
func benchTableSize(b *testing.B, raw []byte) uint64 {
	st, _ := ReadStatement(raw)
	v := &verifier{ctx: context.Background(), r: &reader{b: raw}, maxNodes: DefaultMaxNodes}
	if _, _, err := v.verify(expectOf(st)); err != nil {
		b.Fatal(err)
	}
	return uint64(v.t.len())
}

// sampleHeap samples the heap's objects every 100 µs until the returned
// function is called, which returns the peak above the first sample.
func sampleHeap() func() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(s); return s[0].Value.Uint64() }
	base := read()
	done := make(chan struct{})
	var peak uint64
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		peak = max(peak, read())
		return peak - min(base, peak)
	}
}

// processCPU is the CPU time of the process so far, every thread.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
