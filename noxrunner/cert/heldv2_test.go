package cert

import (
	"context"
	"io"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// TestV2ProverHeldIsBounded: proving a hash chain of at least 10^7
// reductions (2^18 links; at -race, heldV2Chain's smaller scale) in v2,
// the prover's estimate of what it and the run hold (held) stays under a
// bound that does not depend on the run's length: its table is collected
// and its witness streamed. v1's grows with the run (its table keeps
// every link's 11 nodes, its tape every byte): four times the links,
// about four times the bytes. Fails before v2 (there was only v1).
func TestV2ProverHeldIsBounded(t *testing.T) {
	ctx := context.Background()
	prog := corpusProgram(t, "hashchain")
	heldV1 := func(d uint64) uint64 {
		p, m := newProver(ProveOptions{})
		p.intern(prog)
		subject := noun.Subject([]uint64{d})
		p.intern(subject)
		if _, err := m.Reduce(ctx, subject, prog, corpusBudget); err != nil {
			t.Fatal(err)
		}
		return p.held()
	}
	small, large := heldV1(10), heldV1(12)
	if large < 3*small {
		t.Fatalf("v1 held %d bytes at 2^10 links and %d at 2^12: it was expected to grow with the run", small, large)
	}
	// The bound: the table at its threshold, the memo of as many pairs,
	// the output buffer, and the run's cells at its last census.
	bound := uint64(64 << 20)
	var last uint64
	for _, d := range []uint64{heldV2Chain - 4, heldV2Chain} {
		run, p, err := proveTo(ctx, io.Discard, prog, []uint64{d}, corpusBudget, ProveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		held := p.held()
		t.Logf("v2, 2^%d links, %d reductions: held %d bytes (%d table slots)", d, run.Statement.Reductions, held, p.t.len())
		if held > bound {
			t.Fatalf("v2 held %d bytes after %d reductions, over %d", held, run.Statement.Reductions, bound)
		}
		if d == heldV2Chain && run.Statement.Reductions < heldV2MinReductions {
			t.Fatalf("%d reductions, the test wants at least %d", run.Statement.Reductions, heldV2MinReductions)
		}
		last = held
	}
	t.Logf("v1 held %d bytes at 2^10 links, %d at 2^12; v2 %d at 2^%d", small, large, last, heldV2Chain)

	// A run that returns many new pairs and takes no census (no
	// MaxCells): the memo of its pairs must not keep them all alive.
	prog = corpusProgram(t, "nested")
	var held [2]uint64
	for i, d := range []uint64{heldV2NestedSmall, heldV2Nested} {
		run, p, err := proveTo(ctx, io.Discard, prog, []uint64{d}, corpusBudget, ProveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		held[i] = p.held()
		t.Logf("v2, nested %d, %d reductions: held %d bytes", d, run.Statement.Reductions, held[i])
	}
	// Both runs are past the memo's 2^16 pairs: what they hold is the
	// same, give or take the run's cells at the end.
	if held[1] > held[0]+1<<20 {
		t.Fatalf("v2 held %d bytes for nested %d and %d for nested %d", held[0], heldV2NestedSmall, held[1], heldV2Nested)
	}
}

// TestV2MemoWorkIsLinear: the v2 prover empties its memo of the run's
// pairs at a size that follows its table, so interning the run's live
// nouns again after each emptying stays linear in the run. With a fixed
// size (2^16 pairs) a run holding more than that (a deep structure built
// up by doubling, hostile.DeepBranch) recorded its live pairs again every
// 2^16 pairs: quadratic, and DeepBranch at 15 did not finish in 90 s.
func TestV2MemoWorkIsLinear(t *testing.T) {
	prog := parse(t, hostile.DeepBranch())
	run, p, err := proveTo(context.Background(), io.Discard, prog, []uint64{memoWorkDeep}, 1<<40, ProveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	red := run.Statement.Reductions
	t.Logf("deep branch %d: %d reductions, %d pairs recorded in the memo", memoWorkDeep, red, p.cells.recorded)
	if p.cells.recorded > 2*red {
		t.Fatalf("the memo recorded %d pairs over %d reductions: more than two a reduction", p.cells.recorded, red)
	}
}
