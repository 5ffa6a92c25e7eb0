package cert

import (
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// TestIDIndex: every key keeps the id it was given first, through the
// index's doublings, for keys that differ only in their high bits (pair
// keys: head<<32 | tail) as well as in their low ones, and the index
// stays within its load.
func TestIDIndex(t *testing.T) {
	x := newIDIndex(0)
	const n = 1 << 16
	key := func(i uint64) uint64 {
		if i%2 == 0 {
			return i << 32 // only the high half differs
		}
		return i
	}
	for i := range uint64(n) {
		if id, found := x.getOrPut(key(i), uint32(i)); found || id != uint32(i) {
			t.Fatalf("key %d: new key found (%v) or given id %d", i, found, id)
		}
	}
	for i := range uint64(n) {
		if id, found := x.getOrPut(key(i), 0); !found || id != uint32(i) {
			t.Fatalf("key %d: id %d (found %v), want %d", i, id, found, i)
		}
	}
	if x.n != n || x.n*8 > len(x.slots)*idIndexLoad {
		t.Fatalf("%d entries in %d slots", x.n, len(x.slots))
	}
}

// TestCellMemo: the memo finds every cell it recorded, and only those
// (an equal pair in another cell is not the same cell); a reset forgets
// them all, and halves the slots that an interval barely used.
func TestCellMemo(t *testing.T) {
	m := newCellMemo()
	cells := make([]noun.Noun, 1<<14)
	for i := range cells {
		cells[i] = noun.Cons(noun.Atom(uint64(i)), noun.Zero)
		m.put(cells[i].Cell(), uint32(i))
	}
	for i, c := range cells {
		if id, ok := m.get(c.Cell()); !ok || id != uint32(i) {
			t.Fatalf("cell %d: id %d (found %v)", i, id, ok)
		}
	}
	if _, ok := m.get(noun.Cons(noun.Atom(1), noun.Zero).Cell()); ok {
		t.Fatal("an equal pair in another cell was found")
	}
	slots := len(m.slots)
	m.reset()
	for i, c := range cells {
		if _, ok := m.get(c.Cell()); ok {
			t.Fatalf("cell %d found after a reset", i)
		}
	}
	if m.n != 0 || len(m.slots) != slots {
		t.Fatalf("after a reset: %d entries, %d slots of %d", m.n, len(m.slots), slots)
	}
	m.reset() // an interval that used none of them
	if len(m.slots) != slots/2 {
		t.Fatalf("%d slots after an empty interval, want %d", len(m.slots), slots/2)
	}
}
