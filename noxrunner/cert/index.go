package cert

import (
	"math/bits"
	"math/rand/v2"
)

// idIndex maps 64-bit keys to node ids: an open-addressed table with
// linear probing, its slots plain values in one array. It replaces Go
// maps on the hot path of proving and verifying (issue #30): a probe is
// one slot, mostly in one cache line, and nothing is allocated but the
// array, which doubles.
//
// Keys come from programs and certificates, both of which an attacker
// writes, so slots are picked by a hash seeded at random per index
// (seededHash): no input can be chosen to collide.
type idIndex struct {
	slots  []idSlot // a power of two; id 0 marks an empty slot
	n      int
	s0, s1 uint64
}

// idSlot is one entry: the key and its id plus one.
type idSlot struct {
	key uint64
	id  uint32
}

// idIndexLoad bounds how full an index gets, in eighths, before it
// doubles: at 6/8 a linear probe that misses reads about eight slots.
const idIndexLoad = 6

func newIDIndex(hint int) idIndex {
	size := 16
	for size*idIndexLoad/8 < hint {
		size *= 2
	}
	return idIndex{slots: make([]idSlot, size), s0: rand.Uint64(), s1: rand.Uint64()}
}

// seededHash mixes k with two random seeds: the high and low halves of
// their 128-bit product folded together (as wyhash and Go's fallback map
// hash do), so every bit of k moves the low bits that pick a slot.
func seededHash(k, s0, s1 uint64) uint64 {
	hi, lo := bits.Mul64(k^s0, k^s1)
	return hi ^ lo
}

// getOrPut returns the id of key if it has one, else gives it id: one
// hash and one probe for both. (It may double the slots one entry early.)
func (x *idIndex) getOrPut(key uint64, id uint32) (uint32, bool) {
	if (x.n+1)*8 > len(x.slots)*idIndexLoad {
		x.grow()
	}
	mask := uint64(len(x.slots) - 1)
	for i := seededHash(key, x.s0, x.s1) & mask; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.id == 0 {
			*s = idSlot{key: key, id: id + 1}
			x.n++
			return id, false
		}
		if s.key == key {
			return s.id - 1, true
		}
	}
}

// place writes a slot (id already plus one) into the first free place.
func (x *idIndex) place(key uint64, id1 uint32) {
	mask := uint64(len(x.slots) - 1)
	i := seededHash(key, x.s0, x.s1) & mask
	for x.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = idSlot{key: key, id: id1}
}

// grow doubles the slots, under new seeds.
func (x *idIndex) grow() {
	old := x.slots
	x.slots = make([]idSlot, 2*len(old))
	x.s0, x.s1 = rand.Uint64(), rand.Uint64()
	for _, s := range old {
		if s.id != 0 {
			x.place(s.key, s.id)
		}
	}
}

// reset empties the index in place, under new seeds, keeping its slots:
// a collected table (tablegc.go) refills it with the nodes it keeps,
// which are fewer than it held, so nothing is allocated.
func (x *idIndex) reset() {
	clear(x.slots)
	x.n = 0
	x.s0, x.s1 = rand.Uint64(), rand.Uint64()
}
