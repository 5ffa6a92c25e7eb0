// Package noun holds nox data: atoms (canonical Goldilocks values) and pairs,
// their text syntax, their canonical token encoding and their particles.
//
// A Noun is a small value (a pointer and a word), so atoms never touch the
// heap; that is what lets atom-only arithmetic in the VM run without
// allocation. Pairs live in Cells, which cache their digest (computed lazily,
// only when something asks for it) and a slot the VM uses to cache a
// formula's static cost bound.
//
// Cells are immutable after construction except for those caches, which are
// filled without locking: a noun graph must not be digested or reduced from
// two goroutines at once.
package noun

// Noun is an atom (when the cell pointer is nil) or a pair.
type Noun struct {
	c *Cell
	v uint64
}

// Cell is the storage of a pair.
type Cell struct {
	head, tail Noun
	digest     [4]uint64
	bound      uint64
	flags      uint8
	// slot is the cell's index in the Heap slab it was built in and
	// slab that slab's length; slab 0 is a cell allocated on its own. A
	// Census finds a cell's slab from them (the collector keeps a slab
	// while any of its cells is reachable). They sit in what was the
	// struct's padding: a Cell is 80 bytes either way.
	slot, slab uint16
}

const (
	flagDigest  uint8 = 1 << iota // digest is valid
	flagBound                     // bound is valid
	flagDynamic                   // cached bound is dynamic
)

// Atom returns the atom with value v, which must already be canonical.
// Use Canonical for values from outside.
func Atom(v uint64) Noun { return Noun{v: v} }

// Zero is the atom 0, the empty subject.
var Zero = Noun{}

// Cons builds a pair on the Go heap. Hot paths use a Heap instead.
func Cons(head, tail Noun) Noun { return Noun{c: &Cell{head: head, tail: tail}} }

// IsAtom reports whether n is an atom.
func (n Noun) IsAtom() bool { return n.c == nil }

// IsPair reports whether n is a pair.
func (n Noun) IsPair() bool { return n.c != nil }

// Value is the canonical value of an atom (0 for pairs).
func (n Noun) Value() uint64 { return n.v }

// Head is the left child of a pair; it must only be called on pairs.
func (n Noun) Head() Noun { return n.c.head }

// Tail is the right child of a pair; it must only be called on pairs.
func (n Noun) Tail() Noun { return n.c.tail }

// Cell returns the pair storage (nil for atoms). Identity of cells is
// sharing, not equality: two equal pairs may live in different cells.
func (n Noun) Cell() *Cell { return n.c }

// CachedBound returns the static cost bound cached on this cell by the VM.
func (c *Cell) CachedBound() (v uint64, dynamic, ok bool) {
	return c.bound, c.flags&flagDynamic != 0, c.flags&flagBound != 0
}

// SetBound caches a static cost bound on the cell.
func (c *Cell) SetBound(v uint64, dynamic bool) {
	c.bound = v
	c.flags |= flagBound
	if dynamic {
		c.flags |= flagDynamic
	}
}

// Heap allocates cells in slabs so that building results costs one heap
// allocation per slab rather than per pair, and counts what it hands out.
// A slab is one object to the collector, so one reachable cell keeps its
// whole slab: a Census counts it so.
type Heap struct {
	slab  []Cell
	size  uint16 // length of the current slab
	count uint64
}

// Slabs grow from firstSlab cells to slabSize: a short run (a host-act
// slice builds a few dozen pairs) does not zero and hand the collector
// a full slab it never fills.
const (
	firstSlab = 16
	slabSize  = 256
)

// Cons builds a pair in the heap's current slab.
func (h *Heap) Cons(head, tail Noun) Noun {
	if len(h.slab) == 0 {
		h.size = uint16(min(max(firstSlab, h.count), slabSize))
		h.slab = make([]Cell, h.size)
	}
	c := &h.slab[0]
	c.slot, c.slab = h.size-uint16(len(h.slab)), h.size
	h.slab = h.slab[1:]
	h.count++
	c.head, c.tail = head, tail
	return Noun{c: c}
}

// Count is the number of cells this heap has built.
func (h *Heap) Count() uint64 { return h.count }
