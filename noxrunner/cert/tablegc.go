package cert

import "sort"

// A v2 certificate's node table is collected (docs/certificate.md,
// "The collection"): prover and verifier drop, at the same points, every
// node no later step can name. Ids are then two things:
//
//   - the certificate's ids, which count every definition since the
//     start (64-bit: they never wrap) and are never reused, so that a
//     back-reference "k places before the newest" names one definition
//     forever, and a reference to a dropped one is simply not found;
//   - the table's slots, which index its arrays. A slot is stable while
//     its node lives, whatever is collected around it (the verifier's
//     walk holds slots in its Go stack across collections), and a
//     dropped node's slot is reused.
//
// docs/design/certificate-v2.md says why the ids are stable rather than
// renumbered.
type tableGC struct {
	free []uint32 // slots of dropped nodes, reused first
	ext  []uint64 // the certificate's id of each slot
	// ids and slots list the live nodes in increasing id order: the
	// lookup of a back-reference.
	ids   []uint64
	slots []uint32
	next  uint64 // the id of the next definition
	// Scratch of collect.
	mark  []uint64
	stack []uint32
}

// newTableV2 is a table whose nodes can be collected.
func newTableV2(sizeHint int) *table {
	t := newTable(sizeHint)
	t.gc = &tableGC{ext: make([]uint64, 0, sizeHint)}
	return t
}

// nodes is how many nodes the table holds.
func (t *table) nodes() uint32 {
	if t.gc == nil {
		return t.len()
	}
	return t.len() - uint32(len(t.gc.free))
}

// pushGC adds a node to a collected table, in a free slot if there is one.
func (t *table) pushGC(h, tl uint32, v uint64) uint32 {
	g := t.gc
	var id uint32
	if n := len(g.free); n > 0 {
		id = g.free[n-1]
		g.free = g.free[:n-1]
		t.head[id], t.tail[id], t.val[id] = h, tl, v
		t.bound[id], t.bflags[id] = 0, 0
		g.ext[id] = g.next
	} else {
		id = t.len()
		if len(t.head) == cap(t.head) {
			t.grow()
		}
		t.head = append(t.head, h)
		t.tail = append(t.tail, tl)
		t.val = append(t.val, v)
		t.bound = append(t.bound, 0)
		t.bflags = append(t.bflags, 0)
		if len(g.ext) == cap(g.ext) {
			g.ext = regrow(g.ext, cap(t.head))
		}
		g.ext = append(g.ext, g.next)
	}
	if len(g.ids) == cap(g.ids) {
		// Doubled, as the table's arrays (grow): a verification's
		// memory is what it allocates.
		c := max(2*cap(g.ids), 64)
		g.ids, g.slots = regrow(g.ids, c), regrow(g.slots, c)
	}
	g.ids = append(g.ids, g.next)
	g.slots = append(g.slots, id)
	g.next++
	return id
}

// slotOf is the slot of the node with certificate id x (< next), or
// false if it was dropped. The nodes defined since the last collection
// are found by their distance from the newest; older ones by a binary
// search of the live ids.
func (g *tableGC) slotOf(x uint64) (uint32, bool) {
	n := len(g.ids)
	if d := g.next - 1 - x; d < uint64(n) {
		if i := n - 1 - int(d); g.ids[i] == x {
			return g.slots[i], true
		}
	}
	i := sort.Search(n, func(i int) bool { return g.ids[i] >= x })
	if i < n && g.ids[i] == x {
		return g.slots[i], true
	}
	return 0, false
}

// collect drops every node not reachable from roots and returns how many
// nodes are kept. Iterative: a kept noun can be millions of levels deep.
// The content indexes are emptied in place and refilled with the kept
// nodes (an open-addressed index cannot delete without tombstones); a
// collection allocates nothing once its scratch has grown, and costs time in
// proportion to the nodes it keeps, and comes only after the table has
// at least doubled since the last (threshold), so its cost is at most a
// constant per node defined.
func (t *table) collect(roots []uint32) int {
	g := t.gc
	words := (int(t.len()) + 63) / 64
	if cap(g.mark) < words {
		g.mark = make([]uint64, words)
	}
	mark := g.mark[:words]
	clear(mark)
	stack := append(g.stack[:0], roots...)
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if mark[id/64]&(1<<(id%64)) != 0 {
			continue
		}
		mark[id/64] |= 1 << (id % 64)
		if !t.isAtom(id) {
			stack = append(stack, t.head[id], t.tail[id])
		}
	}
	g.stack = stack[:0]
	kept := 0
	t.small = [smallAtoms]uint32{}
	t.atoms.reset()
	t.pairs.reset()
	for i, id := range g.slots {
		if mark[id/64]&(1<<(id%64)) == 0 {
			g.free = append(g.free, id)
			continue
		}
		g.ids[kept], g.slots[kept] = g.ids[i], id
		kept++
		switch {
		case !t.isAtom(id):
			t.pairs.getOrPut(uint64(t.head[id])<<32|uint64(t.tail[id]), id)
		case t.val[id] < smallAtoms:
			t.small[t.val[id]] = id + 1
		default:
			t.atoms.getOrPut(t.val[id], id)
		}
	}
	g.ids, g.slots = g.ids[:kept], g.slots[:kept]
	return kept
}
