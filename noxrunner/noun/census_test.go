package noun

import (
	"testing"
	"unsafe"
)

// The slab fields sit in what was padding: a Cell stays 80 bytes.
func TestCellSize(t *testing.T) {
	if s := unsafe.Sizeof(Cell{}); s != 80 {
		t.Fatalf("a Cell is %d bytes", s)
	}
}

// TestCensusCountsSlabs: a reachable cell keeps its whole slab, so one
// cell from each of ten full slabs counts as ten slabs; cells built on
// their own count one each; shared cells count once.
func TestCensusCountsSlabs(t *testing.T) {
	var h Heap
	for range 1000 { // past the small first slabs
		h.Cons(Zero, Zero)
	}
	for len(h.slab) != 0 {
		h.Cons(Zero, Zero)
	}
	var kept []Noun
	for range 10 {
		kept = append(kept, h.Cons(Atom(1), Atom(2)))
		for range slabSize - 1 {
			h.Cons(Zero, Zero)
		}
	}
	var c Census
	if n, ok := c.Count(kept, 1<<30, nil); !ok || n != 10*slabSize {
		t.Fatalf("one cell from each of ten slabs: %d cells, %v", n, ok)
	}
	// A list of 100 cells of its own, sharing one tail.
	shared := Cons(Atom(7), Atom(8))
	list := Zero
	for i := range 99 {
		list = Cons(Cons(Atom(uint64(i)), shared), list)
	}
	if n, _ := c.Count([]Noun{list, shared, list}, 1<<30, nil); n != 99*2+1 {
		t.Fatalf("a list of 99 pairs of pairs sharing a tail: %d cells", n)
	}
	// The Census keeps nothing between counts.
	if len(c.seen) != 0 || len(c.slabs) != 0 || len(c.stack) != 0 {
		t.Fatalf("scratch left: %d seen, %d slabs, %d stacked", len(c.seen), len(c.slabs), len(c.stack))
	}
}

// TestCensusStops: a count stops once it passes its limit, and when its
// stop function says so.
func TestCensusStops(t *testing.T) {
	list := Zero
	for i := range 100_000 {
		list = Cons(Atom(uint64(i)), list)
	}
	var c Census
	if n, ok := c.Count([]Noun{list}, 500, nil); !ok || n != 501 {
		t.Fatalf("limit 500: %d, %v", n, ok)
	}
	polls := 0
	if _, ok := c.Count([]Noun{list}, 1<<30, func() bool { polls++; return polls == 3 }); ok || polls != 3 {
		t.Fatalf("stopped: %v after %d polls", ok, polls)
	}
	if n, ok := c.Count([]Noun{list}, 1<<30, func() bool { return false }); !ok || n != 100_000 {
		t.Fatalf("whole list: %d, %v", n, ok)
	}
}
