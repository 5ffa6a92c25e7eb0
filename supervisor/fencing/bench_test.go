package fencing

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// callChain calls act tag k times in a row and returns the witnesses.
func callChain(tag uint64, k int) string {
	c := fmt.Sprintf("[16 [[1 %d] [1 0]]]", tag)
	s := c
	for range k - 1 {
		s = "[3 [" + c + " " + s + "]]"
	}
	return s
}

// BenchmarkGuardedActRoundTrip is one act's way through the protocol
// with durable commits (every commit fsynced): prepare (the attempt
// recorded and signed), dispatch (the claim signed, then committed under
// the ward guard, the act called), the outcome recorded. The slices of
// the program around it are not timed. p50-ms and p99-ms are per round
// trip.
func BenchmarkGuardedActRoundTrip(b *testing.B) {
	h := newHarness(b)
	h.grant(tagHost)
	h.bind()
	p := h.install(callOnInput(tagHost), tagHost)
	lat := make([]time.Duration, 0, b.N)
	var cpu time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		inv := h.invoke(p, uint64(i))
		h.awaiting(inv)
		b.StartTimer()
		start, cpu0 := time.Now(), cpuTime()
		tok, err := h.e.Prepare(ctx, inv.ID)
		if err != nil {
			b.Fatal(err)
		}
		res, err := h.e.Dispatch(ctx, tok)
		if err != nil || res.Outcome == nil {
			b.Fatalf("dispatch: %v %+v", err, res)
		}
		lat = append(lat, time.Since(start))
		cpu += cpuTime() - cpu0
		b.StopTimer()
		if got := h.drive(inv); got.Status != store.InvocationCompleted {
			b.Fatalf("%s", got.Status)
		}
		b.StartTimer()
	}
	b.StopTimer()
	loadbench.ReportLatency(b, lat, 0.5, 0.99)
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is this process's CPU time (user and system): what a benchmark
// costs whatever else shares the machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkActsPerSecond drives 32 invocations at once, each a program
// of 8 host acts in a row, through slices, prepare, dispatch and
// outcome, with durable commits, and reports acts/s. "batched" writes
// through the store's group commit (each claim still decided on its own,
// one after the other in the shared transaction), "unbatched" commits
// every write alone: run side by side in one binary, their ratio is what
// the group commit gives.
func BenchmarkActsPerSecond(b *testing.B) {
	for _, mode := range []string{"batched", "unbatched"} {
		b.Run(mode, func(b *testing.B) {
			h := newHarness(b)
			h.unbatched = mode == "unbatched"
			h.e = h.engine("bench")
			h.grant(tagHost)
			h.bind()
			const inFlight, acts = 32, 8
			p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(b, callChain(tagHost, acts)), Acts: []uint64{tagHost}, MaxInFlight: 1 << 20})
			h.must(err)
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			for round := range b.N {
				var wg sync.WaitGroup
				errs := make(chan error, inFlight)
				for i := range inFlight {
					wg.Add(1)
					go func() {
						defer wg.Done()
						inv, err := h.e.Invoke(ctx, p.ID, []uint64{uint64(round*inFlight + i)})
						if err != nil {
							errs <- err
							return
						}
						got, err := h.e.Drive(ctx, inv.ID)
						if err != nil || got.Status != store.InvocationCompleted || got.Ordinal != acts {
							errs <- fmt.Errorf("drive: %v %v", err, got)
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
			elapsed, cpu := time.Since(start), cpuTime()-cpu0
			b.StopTimer()
			n := float64(b.N * inFlight * acts)
			b.ReportMetric(n/elapsed.Seconds(), "acts/s")
			b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/act")
		})
	}
}
