package fencing

import (
	"runtime"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// On [F n], spinF computes F(n) = 1 if n = 0 else F(n−1) + F(n−1), each
// call building its subject and dropping it; growF computes F(n) = 0 if
// n = 0 else [F(n−1) F(n−1)], holding every pair it builds.
const (
	heldSpinF = "[4 [[9 [[0 3] [1 0]]] [[1 1] [5 [[2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]] [2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]]]]]]]"
	heldGrowF = "[4 [[9 [[0 3] [1 0]]] [[1 0] [3 [[2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]] [2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]]]]]]]"
)

func onInput(f string) string { return "[2 [[3 [[1 " + f + "] [0 2]]] [1 " + f + "]]]" }

// TestRunBoundsWhatItHolds: MaxCells bounds what a run of a prog holds,
// not the pairs it builds: a prog that builds 2^17 pairs and drops them
// completes under a bound of 2^14 (before, it failed memory_exhausted
// once it had built 2^14), and one that holds what it builds still stops
// memory_exhausted, having allocated about its bound.
func TestRunBoundsWhatItHolds(t *testing.T) {
	h := newHarness(t)
	e, err := New(Config{Store: h.st.Fencing(), Trust: h.st.Trust(), Vault: h.e.vault, Acts: h.acts, Boot: "small", MaxCells: 1 << 14})
	h.must(err)
	h.e = e
	h.grant()
	h.bind()
	spin, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, onInput(heldSpinF)), StepLimit: 1 << 26})
	h.must(err)
	got := h.drive(h.invoke(spin, 16))
	if got.Status != store.InvocationCompleted || len(got.Output) != 1 || got.Output[0] != 1<<16 {
		t.Fatalf("spin 16: %s %v %v", got.Status, got.Output, got.Error)
	}
	grow, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, onInput(heldGrowF)), StepLimit: 1 << 40})
	h.must(err)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got = h.drive(h.invoke(grow, 40))
	runtime.ReadMemStats(&after)
	if got.Status != store.InvocationFailed || got.Error.Code != protocol.CodeMemoryExhausted {
		t.Fatalf("grow 40: %s %v", got.Status, got.Error)
	}
	// 2^14 cells are 1.25 MiB; the run stops before holding 5/4 of it.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("grow 40 allocated %d MiB under a bound of 2^14 cells", grew>>20)
	}
}

// TestChurnThenActGoesOn: what a kept run built and dropped before an act
// does not count against the witness it is handed, nor as what it holds
// while parked: a prog that builds 2^17 pairs and drops them, calls host,
// and does it again completes under a bound of 2^14 cells. Counting the
// pairs built there (as the kept run's first version did) failed its act's
// outcome memory_exhausted.
func TestChurnThenActGoesOn(t *testing.T) {
	h := newHarness(t)
	e, err := New(Config{Store: h.st.Fencing(), Trust: h.st.Trust(), Vault: h.e.vault, Acts: h.acts, Boot: "small", MaxCells: 1 << 14})
	h.must(err)
	h.e = e
	h.grant(tagHost)
	h.bind()
	spin := onInput(heldSpinF)
	src := "[3 [" + callOn(spin, tagHost) + " " + spin + "]]"
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, src), Acts: []uint64{tagHost}, StepLimit: 1 << 26})
	h.must(err)
	got := h.drive(h.invoke(p, 16))
	if got.Status != store.InvocationCompleted || len(got.Output) == 0 || got.Output[len(got.Output)-1] != 1<<16 {
		t.Fatalf("spin 16, host, spin 16: %s %v %v", got.Status, got.Output, got.Error)
	}
}
