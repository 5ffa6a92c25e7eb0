package cert

import "unsafe"

// held is what the verifier's own arrays hold, in bytes: the node table
// (its arrays, content indexes and collection state), the deferred
// digest checks, the arrays of the last digest checks, the walk's roots
// and the reader's window. The Go stack of the walk (at most DepthLimit
// calls deep) and the source (a decompressor: its window) are not
// counted. For the benchmarks (held-bytes) and the tests: in a v2 walk
// it does not grow with the certificate's length once the table's live
// nodes stop growing (TestV2VerifierHeldIsBounded).
func (v *verifier) held() uint64 {
	var n uint64
	if t := v.t; t != nil {
		n += bytesOf(t.head) + bytesOf(t.tail) + bytesOf(t.val) + bytesOf(t.bound) + bytesOf(t.bflags)
		n += bytesOf(t.atoms.slots) + bytesOf(t.pairs.slots)
		if g := t.gc; g != nil {
			n += bytesOf(g.free) + bytesOf(g.ext) + bytesOf(g.ids) + bytesOf(g.slots) + bytesOf(g.mark) + bytesOf(g.stack)
		}
	}
	for _, p := range v.checks.pages {
		n += bytesOf(p)
	}
	n += bytesOf(v.checks.pages)
	if d := v.digests; d != nil {
		n += bytesOf(d.needed) + bytesOf(d.rank) + bytesOf(d.digest) + bytesOf(d.topo) +
			bytesOf(d.starts) + bytesOf(d.order) + bytesOf(d.stack)
	}
	if g := v.gc; g != nil {
		n += bytesOf(g.held) + bytesOf(g.roots)
	}
	n += bytesOf(v.bstack) + bytesOf(v.r.b)
	return n
}

// bytesOf is the size of s's array.
func bytesOf[T any](s []T) uint64 {
	var zero T
	return uint64(cap(s)) * uint64(unsafe.Sizeof(zero))
}
