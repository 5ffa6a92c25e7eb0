package cert

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// spinProgram computes F(n) = 0 if n = 0 else F(n−1) + F(n−1) on its one
// input: 2^(n+1) − 1 calls, each building its subject and dropping it,
// 24·2^n reductions, a certificate of a few dozen distinct nodes.
const spinProgram = "[2 [[3 [[1 [4 [[9 [[0 3] [1 0]]] [[1 0] [5 [[2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]] [2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]]]]]]]] [0 2]]] [1 [4 [[9 [[0 3] [1 0]]] [[1 0] [5 [[2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]] [2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]]]]]]]]]]"

// optionsFor are the bounds a host with memory bytes for nox data sets.
func optionsFor(memory uint64) ProveOptions {
	return ProveOptions{MaxCells: memory / reduce.CellBytes, MaxNodes: memory / ProverNodeBytes, MaxMemory: memory}
}

// TestProveChurnUnderMemory: proving a run that builds far more pairs
// than its bound allows to hold, and holds few, succeeds, and its
// certificate (over many of the tape's blocks, the last ones of the
// largest size) verifies. Before the census, the run stopped after
// MaxCells pairs.
func TestProveChurnUnderMemory(t *testing.T) {
	opt := optionsFor(16 << 20)
	run, err := Prove(context.Background(), parse(t, spinProgram), []uint64{16}, 1<<40, opt)
	if err != nil {
		t.Fatalf("spin 16 under %d cells: %v", opt.MaxCells, err)
	}
	if run.Steps < 8*opt.MaxCells || len(run.Certificate) < tapeMaxBlock {
		t.Fatalf("%d steps, a certificate of %d bytes", run.Steps, len(run.Certificate))
	}
	if _, _, err := Verify(context.Background(), run.Certificate, expectOf(&run.Statement), Bounds{}); err != nil {
		t.Fatal(err)
	}
	// The certificate is the statement, the call count and the tape.
	p, m := newProver(ProveOptions{})
	prog := parse(t, spinProgram)
	p.intern(prog)
	p.intern(noun.Subject([]uint64{16}))
	if _, err := m.Reduce(context.Background(), noun.Subject([]uint64{16}), prog, 1<<40); err != nil {
		t.Fatal(err)
	}
	want := append(appendUvarint(appendStatement(nil, &run.Statement), p.calls), p.witness()...)
	if string(want) != string(run.Certificate) {
		t.Fatalf("the certificate differs from statement + calls + tape (%d and %d bytes)", len(run.Certificate), len(want))
	}
}

// TestProverKeepsLittle: what a prover keeps alive once its run is done
// is its table, its tape and at most one census interval of the run's
// pairs, not every pair the run returned (its memo used to keep them
// all: 10 MiB here).
func TestProverKeepsLittle(t *testing.T) {
	prog := parse(t, spinProgram)
	subject := noun.Subject([]uint64{16})
	p, m := newProver(optionsFor(16 << 20))
	p.intern(prog)
	p.intern(subject)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := m.Reduce(context.Background(), subject, prog, 1<<40); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	record := int64(p.tape.allocated()) + int64(p.t.len())*ProverNodeBytes
	t.Logf("kept %d KiB, of which the record %d KiB; %d memo entries, %d censuses", kept>>10, record>>10, p.cells.n, m.Stats().Censuses)
	if kept > record+4<<20 {
		t.Fatalf("the prover keeps %d KiB, its record is %d KiB", kept>>10, record>>10)
	}
	runtime.KeepAlive(p)
}

// TestProverMemoryPerNode: a node of the prover's table costs at most
// ProverNodeBytes, counting the growth of its arrays and maps.
func TestProverMemoryPerNode(t *testing.T) {
	const n = 1 << 20
	var tab *table
	alloc := allocated(func() {
		tab = newTable(1024)
		prev := uint32(0)
		for i := range uint64(n / 2) {
			a, _ := tab.atom(i + 1)
			prev, _ = tab.pair(a, prev)
		}
	})
	per := float64(alloc) / float64(tab.len())
	t.Logf("%d nodes, %d bytes allocated, %.0f per node", tab.len(), alloc, per)
	if per > ProverNodeBytes {
		t.Fatalf("%.0f bytes per node, over %d", per, ProverNodeBytes)
	}
}

// TestProveMaxMemory: a run whose certificate needs more than MaxMemory
// (a hash chain: every digest is new) stops with the cell limit, early;
// under enough memory it proves.
func TestProveMaxMemory(t *testing.T) {
	chain := "[2 [[3 [[1 [4 [[9 [[0 6] [1 0]]] [[0 7] [2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] [15 [0 7]]]]]] [0 2]]]]]]] [3 [[0 6] [0 2]]]]] [1 [4 [[9 [[0 6] [1 0]]] [[0 7] [2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] [15 [0 7]]]]]] [0 2]]]]]]]]]"
	// 300 links (the depth limit allows about as many): 2,700 nodes.
	inputs := []uint64{300, 7}
	if _, err := Prove(context.Background(), parse(t, chain), inputs, 1<<40, optionsFor(64<<20)); err != nil {
		t.Fatal(err)
	}
	_, err := Prove(context.Background(), parse(t, chain), inputs, 1<<40, ProveOptions{MaxMemory: 256 << 10})
	if !errors.Is(err, reduce.ErrCellLimit) {
		t.Fatalf("under 256 KiB: %v", err)
	}
}
