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

// Heap builds the pairs of a run and counts them. Each cell is its own
// allocation: the collector frees a cell as soon as it is unreachable.
// (Cells built in shared slabs, one object to the collector, made every
// cell of a slab live while one was, and a slab's dead cells kept what
// they pointed to alive, the previous slab's cells among them: a loop
// that rebuilt its subject kept every pair it ever built. See
// docs/worker.md, "Memory guard".)
type Heap struct {
	count uint64
}

// Cons builds a pair and counts it.
func (h *Heap) Cons(head, tail Noun) Noun {
	h.count++
	return Noun{c: &Cell{head: head, tail: tail}}
}

// Count is the number of cells this heap has built.
func (h *Heap) Count() uint64 { return h.count }
