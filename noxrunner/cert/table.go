package cert

import (
	"encoding/binary"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// atomMark in head marks an atom node.
const atomMark = ^uint32(0)

// table holds distinct nouns as ids. Ids are handed out in a fixed order
// (program, then subject, then witness definitions), children before
// parents, so prover and verifier agree on every id. Because no noun is
// stored twice, equal ids mean equal nouns and equal digests.
type table struct {
	head, tail []uint32 // tail holds nothing for atoms
	val        []uint64 // atom values
	// The atoms below smallAtoms (a program's tags and axes, loop
	// counters) are found by value, as their id plus one (0: none);
	// the others in atoms.
	small  [smallAtoms]uint32
	atoms  idIndex
	pairs  idIndex  // head<<32 | tail
	bound  []uint64 // static bound of the node as a formula
	bflags []uint8  // 1: bound known, 2: dynamic
	// gc is set in a v2 table, whose nodes are collected (tablegc.go);
	// ids are then slots, and t.len() counts slots, not nodes.
	gc *tableGC
}

// smallAtoms is how many atom values the table finds without hashing.
const smallAtoms = 256

func newTable(sizeHint int) *table {
	return &table{
		head:   make([]uint32, 0, sizeHint),
		tail:   make([]uint32, 0, sizeHint),
		val:    make([]uint64, 0, sizeHint),
		atoms:  newIDIndex(sizeHint / 8),
		pairs:  newIDIndex(sizeHint / 2),
		bound:  make([]uint64, 0, sizeHint),
		bflags: make([]uint8, 0, sizeHint),
	}
}

func (t *table) len() uint32 { return uint32(len(t.head)) }

// nextSlot is the id push gives the next node.
func (t *table) nextSlot() uint32 {
	if t.gc != nil && len(t.gc.free) > 0 {
		return t.gc.free[len(t.gc.free)-1]
	}
	return uint32(len(t.head))
}
func (t *table) isAtom(id uint32) bool { return t.head[id] == atomMark }

func (t *table) push(h, tl uint32, v uint64) uint32 {
	if t.gc != nil {
		return t.pushGC(h, tl, v)
	}
	id := uint32(len(t.head))
	if len(t.head) == cap(t.head) {
		t.grow()
	}
	t.head = append(t.head, h)
	t.tail = append(t.tail, tl)
	t.val = append(t.val, v)
	t.bound = append(t.bound, 0)
	t.bflags = append(t.bflags, 0)
	return id
}

// grow doubles the arrays' room, to the same capacity in each (push
// checks one of them). append grows a large slice by a quarter at a
// time, which allocates about five times its final size over its
// growth; doubling allocates at most twice, and a verification's memory
// is what it allocates (NodeBytes).
func (t *table) grow() {
	c := max(2*cap(t.head), 64)
	t.head = regrow(t.head, c)
	t.tail = regrow(t.tail, c)
	t.val = regrow(t.val, c)
	t.bound = regrow(t.bound, c)
	t.bflags = regrow(t.bflags, c)
}

// regrow copies s into an array of capacity c exactly (slices.Grow
// rounds each element size's capacity up differently, and an array left
// shorter than head would then grow by append's quarters).
func regrow[T any](s []T, c int) []T {
	return append(make([]T, 0, c), s...)
}

// atom returns the id of atom v, adding it if new.
func (t *table) atom(v uint64) (id uint32, added bool) {
	if v < smallAtoms {
		if id1 := t.small[v]; id1 != 0 {
			return id1 - 1, false
		}
		id = t.push(atomMark, 0, v)
		t.small[v] = id + 1
		return id, true
	}
	if id, found := t.atoms.getOrPut(v, t.nextSlot()); found {
		return id, false
	}
	return t.push(atomMark, 0, v), true
}

// pair returns the id of [h tl], adding it if new.
func (t *table) pair(h, tl uint32) (id uint32, added bool) {
	key := uint64(h)<<32 | uint64(tl)
	if id, found := t.pairs.getOrPut(key, t.nextSlot()); found {
		return id, false
	}
	return t.push(h, tl, 0), true
}

// addTokens interns a noun straight from its canonical token encoding,
// in the order the prover interns a noun (atoms as they come, a pair
// when its tail is done), without building the noun first. It returns the root id and
// the bytes used; tokens must already be known valid (readStatement
// decodes them first with all bounds).
func (t *table) addTokens(b []byte) (uint32, int) {
	type frame struct {
		head    uint32
		hasHead bool
	}
	var stack []frame
	pos := 0
	for {
		var id uint32
		if b[pos] == noun.TokenPair {
			pos++
			stack = append(stack, frame{})
			continue
		}
		id, _ = t.atom(binary.LittleEndian.Uint64(b[pos+1:]))
		pos += 9
		for {
			if len(stack) == 0 {
				return id, pos
			}
			top := &stack[len(stack)-1]
			if !top.hasHead {
				top.head, top.hasHead = id, true
				break
			}
			id, _ = t.pair(top.head, id)
			stack = stack[:len(stack)-1]
		}
	}
}

// addSubject interns the subject [xn [… [x1 0]]] of inputs in the order
// the prover interns noun.Subject(inputs): the atoms xn … x1, 0, then the
// pairs from the innermost out.
func (t *table) addSubject(inputs []uint64) uint32 {
	atoms := make([]uint32, len(inputs))
	for i := len(inputs) - 1; i >= 0; i-- {
		atoms[i], _ = t.atom(inputs[i])
	}
	id, _ := t.atom(0)
	for i := range inputs {
		id, _ = t.pair(atoms[i], id)
	}
	return id
}
