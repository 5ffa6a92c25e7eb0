package reduce_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// spinPairF is spinF on the subject [F [n 0]]: every call builds two
// pairs, [n−1 0] and the subject over it, and drops them when it returns,
// so a run holds only the subjects on its path, at most n+1 of them.
const spinPairF = "[4 [[9 [[0 6] [1 0]]] [[1 0] [5 [[2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] [1 0]]]]] [0 2]]] [2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] [1 0]]]]] [0 2]]]]]]]]"

// spinPairOn runs spinPairF on [F [n 0]]. The first subject is built
// whole (two pairs) or its [n 0] quoted (one pair): which of a call's two
// pairs comes first in a run's pair count differs between the two.
func spinPairOn(n int, quoted bool) string {
	inner := fmt.Sprintf("[3 [[1 %d] [1 0]]]", n)
	if quoted {
		inner = fmt.Sprintf("[1 [%d 0]]", n)
	}
	return fmt.Sprintf("[2 [[3 [[1 %s] %s]] [1 %s]]]", spinPairF, inner, spinPairF)
}

// heapInUse is the process's heap in use after two collections (the
// second frees what the first's finalizer-free sweep left).
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// heapHeldBy runs formula on a fresh machine under cfg and returns what
// the process's heap grew by with the finished machine still referenced,
// and the run's stats.
func heapHeldBy(t *testing.T, cfg reduce.Config, formula string) (uint64, reduce.Stats) {
	t.Helper()
	f := mustParse(t, formula)
	before := heapInUse()
	m := reduce.New(cfg)
	out, err := m.Reduce(context.Background(), noun.Zero, f, 1<<40)
	if err != nil || out.Status != reduce.OK {
		t.Fatalf("run: %+v %v", out, err)
	}
	after := heapInUse()
	st := m.Stats()
	runtime.KeepAlive(m)
	return after - min(before, after), st
}

// TestDeadPairsAreFreed: a run that builds a pair per call and drops it
// leaves the process holding about as much after 4N reductions as after
// N. Before cells were allocated one by one, a Heap slab was one object
// to the collector: the dead cells of a slab kept by one live cell kept
// what they point to alive, the previous slab when a call's two pairs
// straddled a slab boundary, and so on down the run: 21 MB after 1.8 M
// reductions, four times what 0.45 M left.
func TestDeadPairsAreFreed(t *testing.T) {
	for _, quoted := range []bool{false, true} {
		small, s := heapHeldBy(t, reduce.Config{}, spinPairOn(14, quoted))
		large, l := heapHeldBy(t, reduce.Config{}, spinPairOn(16, quoted))
		t.Logf("quoted=%v: %d reductions (%d pairs) leave %d bytes; %d (%d pairs) leave %d",
			quoted, s.Steps, s.Cells, small, l.Steps, l.Cells, large)
		if l.Steps < 4*s.Steps-8 {
			t.Fatalf("the large run is %d reductions, the small %d", l.Steps, s.Steps)
		}
		if large > small+small/2+1<<20 {
			t.Errorf("quoted=%v: the heap grows with the run: %d bytes after %d reductions, %d after %d",
				quoted, small, s.Steps, large, l.Steps)
		}
	}
}

// TestCensusCoversTheHeap: what a run under MaxCells leaves the process
// holding is within what its bound allows (MaxCells·CellBytes), however
// many pairs it built and dropped: the census's count is what the
// collector keeps, not less. Before, spin on [F [n 0]] finished under a
// bound of 16 Ki cells (3 MiB) with the census counting 7 Ki while the
// process held 21 MB.
func TestCensusCoversTheHeap(t *testing.T) {
	const maxCells = 1 << 14
	for _, quoted := range []bool{false, true} {
		held, st := heapHeldBy(t, reduce.Config{MaxCells: maxCells}, spinPairOn(16, quoted))
		t.Logf("quoted=%v: %d pairs built, %d censuses, the last counted %d cells; the heap kept %d bytes",
			quoted, st.Cells, st.Censuses, st.Held, held)
		if st.Censuses == 0 {
			t.Fatalf("no census in %d pairs", st.Cells)
		}
		if held > maxCells*reduce.CellBytes {
			t.Errorf("quoted=%v: the heap kept %d bytes, over the bound's %d (the census counted %d cells)",
				quoted, held, maxCells*reduce.CellBytes, st.Held)
		}
	}
}
