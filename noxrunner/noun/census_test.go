package noun

import (
	"testing"
	"unsafe"
)

// A Cell is 80 bytes, one of the allocator's size classes: a cell built
// on its own wastes nothing.
func TestCellSize(t *testing.T) {
	if s := unsafe.Sizeof(Cell{}); s != 80 {
		t.Fatalf("a Cell is %d bytes", s)
	}
}

// TestCensusCountsCells: a reachable cell counts one, however the cells
// around it were built; shared cells count once.
func TestCensusCountsCells(t *testing.T) {
	var h Heap
	var kept []Noun
	for range 10 {
		kept = append(kept, h.Cons(Atom(1), Atom(2)))
		for range 255 {
			h.Cons(Zero, Zero)
		}
	}
	var c Census
	if n, ok := c.Count(kept, 1<<30, nil); !ok || n != 10 {
		t.Fatalf("one cell of every 256 built: %d cells, %v", n, ok)
	}
	// A list of 99 pairs of pairs sharing one tail.
	shared := h.Cons(Atom(7), Atom(8))
	list := Zero
	for i := range 99 {
		list = h.Cons(h.Cons(Atom(uint64(i)), shared), list)
	}
	if n, _ := c.Count([]Noun{list, shared, list}, 1<<30, nil); n != 99*2+1 {
		t.Fatalf("a list of 99 pairs of pairs sharing a tail: %d cells", n)
	}
	// The Census keeps nothing between counts.
	if len(c.seen) != 0 || len(c.stack) != 0 {
		t.Fatalf("scratch left: %d seen, %d stacked", len(c.seen), len(c.stack))
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
