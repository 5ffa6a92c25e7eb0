package cert

import (
	"context"
	"math/bits"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/hemera"
)

// digestSet holds the digests the deferred checks need: of every operand
// and of every node below one, each computed once. Ids are numbered
// children first, so the needed nodes are marked in one pass down the
// ids and digested in one pass up them; the cores share the result,
// level by level (a node's level is one more than its children's), so
// neither the memory nor the work depends on GOMAXPROCS.
//
// Its cost is charged to the node bound with the table (NodeBytes): a
// digest (32 bytes) per needed node and, to spread the work over the
// cores, its place in the order of levels and the levels' starts (at
// most 8 bytes); marks and ranks take a bit and a half per node of the
// table.
type digestSet struct {
	t *table
	// needed marks the needed ids; rank[w] counts the marks in the words
	// before w, so that a needed id's index into digest is its rank.
	needed []uint64
	rank   []uint32
	digest []hemera.Digest
	// topo lists the needed ids children first when ids are not (a v2
	// table reuses the slots of collected nodes); nil: increasing ids.
	topo []uint32
	// starts and order are computeAll's scratch, stack
	// newDigestSetTopo's.
	starts, order []uint32
	stack         []topoFrame
}

// topoFrame is newDigestSetTopo's walk: a frame with done set lists its
// node, after its children.
type topoFrame struct {
	id   uint32
	done bool
}

// reuse returns d's arrays for a new set of words of marks (nil d: new
// ones), the marks cleared: a v2 walk checks digests at every
// collection, and a set as large as the last one then costs no
// allocation (and no page the kernel must fault in again).
func (d *digestSet) reuse(t *table, words int) *digestSet {
	if d == nil {
		d = &digestSet{}
	}
	n := &digestSet{t: t, needed: resize(d.needed, words), rank: resize(d.rank, words),
		digest: d.digest[:0], topo: d.topo[:0], starts: d.starts[:0], order: d.order[:0], stack: d.stack[:0]}
	clear(n.needed)
	return n
}

// resize returns s with length n, reallocated only if its capacity is
// short; its contents are unspecified.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// newDigestSet marks the operands of checks and every node below them,
// in the arrays of old (nil: new ones), which it takes over.
func newDigestSet(t *table, checks *digestChecks, old *digestSet) *digestSet {
	if t.gc != nil {
		return newDigestSetTopo(t, checks, old)
	}
	top := checks.slots() - 1
	for top >= 0 && checks.at(top) == 0 {
		top--
	}
	words := (top/checkKinds + 64) / 64
	d := old.reuse(t, words)
	d.topo = nil
	for i := range top + 1 {
		if checks.at(i) != 0 {
			d.mark(uint32(i / checkKinds))
		}
	}
	// A pair's children have lower ids: one pass down marks the rest.
	for w := words - 1; w >= 0; w-- {
		for word := d.needed[w]; word != 0; {
			b := 63 - bits.LeadingZeros64(word)
			word &^= 1 << b
			if id := uint32(w*64 + b); !t.isAtom(id) {
				d.mark(t.head[id])
				d.mark(t.tail[id])
				// The head or tail may be in this word, below b.
				word |= d.needed[w] &^ (^uint64(0) << b)
			}
		}
	}
	var n uint32
	for w, word := range d.needed {
		d.rank[w] = n
		n += uint32(bits.OnesCount64(word))
	}
	d.digest = resize(d.digest, int(n))
	return d
}

func (d *digestSet) mark(id uint32) { d.needed[id/64] |= 1 << (id % 64) }

// index is the place of needed id in digest.
func (d *digestSet) index(id uint32) uint32 {
	w := id / 64
	return d.rank[w] + uint32(bits.OnesCount64(d.needed[w]&(1<<(id%64)-1)))
}

// of is the digest of a needed id, once computed.
func (d *digestSet) of(id uint32) hemera.Digest { return d.digest[d.index(id)] }

// compute digests id from its children's, which must be done.
func (d *digestSet) compute(id uint32) {
	t := d.t
	if t.isAtom(id) {
		d.digest[d.index(id)] = hemera.AtomDigest(t.val[id])
		return
	}
	d.digest[d.index(id)] = hemera.PairDigest(d.of(t.head[id]), d.of(t.tail[id]))
}

// ids calls f for every needed id, children first (in increasing order
// unless topo says otherwise), with its index.
func (d *digestSet) ids(f func(id, i uint32)) {
	if d.topo != nil {
		for _, id := range d.topo {
			f(id, d.index(id))
		}
		return
	}
	var i uint32
	for w, word := range d.needed {
		for ; word != 0; word &= word - 1 {
			f(uint32(w*64+bits.TrailingZeros64(word)), i)
			i++
		}
	}
}

// pollDigests is how many digests are computed between looks at the
// context: about a millisecond and a half.
const pollDigests = 1 << 10

// computeAll computes every needed digest and returns how many. A
// cancelled ctx stops it early (the caller reports ctx's error).
func (d *digestSet) computeAll(ctx context.Context) int {
	n := len(d.digest)
	if n < pairedDigests {
		// Children first is increasing ids.
		stopped := false
		d.ids(func(id, i uint32) {
			if stopped || i%pollDigests == 0 && ctx.Err() != nil {
				stopped = true
				return
			}
			d.compute(id)
		})
		return n
	}
	// By level: a node's level is one more than its children's highest,
	// so the nodes of a level depend only on lower ones, and are
	// digested two at a time (hemera.Permute2 costs about 0.6 of two
	// permutations) and on every core. Each node's digest slot holds its
	// level until the node is digested; the ids are sorted by level (a
	// counting sort).
	t := d.t
	var top uint64
	d.ids(func(id, i uint32) {
		var l uint64
		if !t.isAtom(id) {
			l = 1 + max(d.digest[d.index(t.head[id])][0], d.digest[d.index(t.tail[id])][0])
		}
		d.digest[i][0] = l
		top = max(top, l)
	})
	// starts[l] is where level l starts in order, then, as order is
	// filled, where level l+1 starts.
	starts := resize(d.starts, int(top+1))
	clear(starts)
	d.starts = starts
	for i := range d.digest {
		if l := d.digest[i][0]; l < top {
			starts[l+1]++
		}
	}
	for l := 1; l < len(starts); l++ {
		starts[l] += starts[l-1]
	}
	order := resize(d.order, n)
	d.order = order
	d.ids(func(id, i uint32) {
		l := d.digest[i][0]
		order[starts[l]] = id
		starts[l]++
	})
	var from uint32
	for l, to := range starts {
		if l%pollDigests == 0 && ctx.Err() != nil {
			break
		}
		d.computeLevel(ctx, order[from:to])
		from = to
	}
	return n
}

// pairedDigests is the number of digests from which computeAll sorts
// them by level to digest them in pairs: below it the sort costs about
// what the pairing saves.
const pairedDigests = 16

// computeLevel digests nodes of one level, on every core when there are
// enough of them. (A narrow level, such as each of a long list's, costs
// no goroutine and no allocation.)
func (d *digestSet) computeLevel(ctx context.Context, nodes []uint32) {
	if spreadOver(len(nodes)) <= 1 {
		d.computeChunks(ctx, nodes)
		return
	}
	spread(len(nodes), len(nodes), func(from, to int) {
		d.computeChunks(ctx, nodes[from:to])
	})
}

// computeChunks digests nodes of one level pollDigests at a time,
// stopping between chunks once ctx is done.
func (d *digestSet) computeChunks(ctx context.Context, nodes []uint32) {
	for i := 0; i < len(nodes); i += pollDigests {
		if i > 0 && ctx.Err() != nil {
			return
		}
		d.computeIndependent(nodes[i:min(len(nodes), i+pollDigests)])
	}
}

// computeIndependent digests nodes none of which is below another, two
// at a time.
func (d *digestSet) computeIndependent(nodes []uint32) {
	t := d.t
	for ; len(nodes) >= 2; nodes = nodes[2:] {
		a, b := nodes[0], nodes[1]
		switch {
		case t.isAtom(a) && t.isAtom(b):
			da, db := hemera.AtomDigest2(t.val[a], t.val[b])
			d.digest[d.index(a)], d.digest[d.index(b)] = da, db
		case !t.isAtom(a) && !t.isAtom(b):
			da, db := hemera.PairDigest2(d.of(t.head[a]), d.of(t.tail[a]), d.of(t.head[b]), d.of(t.tail[b]))
			d.digest[d.index(a)], d.digest[d.index(b)] = da, db
		default: // not within a level (atoms are level 0), but correct
			d.compute(a)
			d.compute(b)
		}
	}
	if len(nodes) == 1 {
		d.compute(nodes[0])
	}
}

// newDigestSetTopo is newDigestSet for a table whose slots are not in
// children-first order (v2): the needed nodes are marked by a walk from
// the operands that also lists them children first. Each needed node is
// listed once (4 bytes more a needed node than newDigestSet).
func newDigestSetTopo(t *table, checks *digestChecks, old *digestSet) *digestSet {
	words := (int(t.len()) + 63) / 64
	d := old.reuse(t, words)
	marked := func(id uint32) bool { return d.needed[id/64]&(1<<(id%64)) != 0 }
	stack := d.stack
	for i := range checks.slots() {
		if checks.at(i) == 0 {
			continue
		}
		stack = append(stack, topoFrame{id: uint32(i / checkKinds)})
		for len(stack) > 0 {
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if f.done {
				d.topo = append(d.topo, f.id)
				continue
			}
			if marked(f.id) {
				continue
			}
			d.mark(f.id)
			stack = append(stack, topoFrame{id: f.id, done: true})
			if !t.isAtom(f.id) {
				for _, c := range [2]uint32{t.tail[f.id], t.head[f.id]} {
					if !marked(c) {
						stack = append(stack, topoFrame{id: c})
					}
				}
			}
		}
	}
	d.stack = stack[:0]
	var n uint32
	for w, word := range d.needed {
		d.rank[w] = n
		n += uint32(bits.OnesCount64(word))
	}
	d.digest = resize(d.digest, int(n))
	return d
}
