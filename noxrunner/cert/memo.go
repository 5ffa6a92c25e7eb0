package cert

import (
	"math/rand/v2"
	"unsafe"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// cellMemo is the prover's memo of the run's pairs already in its table,
// by cell: an open-addressed table like idIndex whose keys are the cells
// themselves, so that it keeps them alive (their addresses cannot be
// reused while it names them) and so that it is emptied at each of the
// machine's censuses (see prover.cells). Emptying clears the slots in
// place rather than building a new map: a census comes every 32 Ki
// pairs built or more, and remaking a map each time cost a tenth of a
// loop's proving.
type cellMemo struct {
	slots  []memoSlot // a power of two; a nil cell marks an empty slot
	n      int
	s0, s1 uint64
	// recorded counts the pairs recorded since the start, across
	// emptyings: the interning work of the prover, which must stay
	// linear in the run (TestV2MemoWorkIsLinear).
	recorded uint64
}

type memoSlot struct {
	c  *noun.Cell
	id uint32
}

// memoSlotBytes is what a slot costs; a memo starts with memoFirstSlots
// (a short run's memo stays small).
const (
	memoSlotBytes  = 16
	memoFirstSlots = 64
)

func newCellMemo() cellMemo {
	return cellMemo{slots: make([]memoSlot, memoFirstSlots), s0: rand.Uint64(), s1: rand.Uint64()}
}

// slot is where c's probe starts. The cell's address is its identity,
// which is what the memo is about: Go's collector does not move heap
// objects, and the memo holds c, so the address stays c's. (A Go map
// keyed by pointer hashes the same address.)
func (m *cellMemo) slot(c *noun.Cell) uint64 {
	return seededHash(uint64(uintptr(unsafe.Pointer(c))), m.s0, m.s1) & uint64(len(m.slots)-1)
}

// get returns the id of c.
func (m *cellMemo) get(c *noun.Cell) (uint32, bool) {
	mask := uint64(len(m.slots) - 1)
	for i := m.slot(c); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.c == c {
			return s.id, true
		}
		if s.c == nil {
			return 0, false
		}
	}
}

// put records c, which must not be in the memo, with id.
func (m *cellMemo) put(c *noun.Cell, id uint32) {
	if (m.n+1)*8 > len(m.slots)*idIndexLoad {
		m.grow()
	}
	m.n++
	m.recorded++
	m.place(c, id)
}

func (m *cellMemo) place(c *noun.Cell, id uint32) {
	mask := uint64(len(m.slots) - 1)
	i := m.slot(c)
	for m.slots[i].c != nil {
		i = (i + 1) & mask
	}
	m.slots[i] = memoSlot{c: c, id: id}
}

func (m *cellMemo) grow() {
	old := m.slots
	m.slots = make([]memoSlot, 2*len(old))
	for _, s := range old {
		if s.c != nil {
			m.place(s.c, s.id)
		}
	}
}

// reset empties the memo, letting go of its cells. It keeps its slots
// unless the interval just ended used fewer than an eighth of them
// (then it halves them), so
// that one busy interval does not make every later census clear a large
// array.
func (m *cellMemo) reset() {
	if m.n*8 < len(m.slots) && len(m.slots) > memoFirstSlots {
		m.slots = make([]memoSlot, len(m.slots)/2)
	} else {
		clear(m.slots)
	}
	m.n = 0
	m.s0, m.s1 = rand.Uint64(), rand.Uint64()
}
