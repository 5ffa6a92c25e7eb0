package noun

import "github.com/cyberia-to/cyber-supervisor/noxrunner/hemera"

// Digest returns the structural digest of n (four field elements): an atom
// is a hemera leaf of its 8-byte value, a pair a hemera node of its
// children's digests. Pair digests are computed once and cached on the
// cell, so digesting a shared DAG costs one permutation per distinct cell.
func (n Noun) Digest() hemera.Digest {
	if n.c == nil {
		return hemera.AtomDigest(n.v)
	}
	if n.c.flags&flagDigest != 0 {
		return n.c.digest
	}
	return digestSlow(n.c)
}

// Particle is the 32-byte little-endian form of the digest: the noun's
// content identity.
func (n Noun) Particle() [32]byte { return n.Digest().Bytes() }

// digestSlow fills the digest caches below c without recursion, so that
// arbitrarily deep nouns cannot exhaust the stack.
func digestSlow(c *Cell) hemera.Digest {
	stack := []*Cell{c}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		if top.flags&flagDigest != 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		pending := false
		if h := top.head.c; h != nil && h.flags&flagDigest == 0 {
			stack = append(stack, h)
			pending = true
		}
		if t := top.tail.c; t != nil && t.flags&flagDigest == 0 {
			stack = append(stack, t)
			pending = true
		}
		if pending {
			continue
		}
		top.digest = hemera.PairDigest(top.head.Digest(), top.tail.Digest())
		top.flags |= flagDigest
		stack = stack[:len(stack)-1]
	}
	return c.digest
}

// Equal reports whether a and b have the same digest, which is nox's
// equality. Shared cells and atoms are decided without hashing.
func Equal(a, b Noun) bool {
	if a.c == nil || b.c == nil {
		// An atom's digest is a leaf and a pair's a node (different flags
		// in the capacity), so an atom equals only the same atom.
		return a.c == b.c && a.v == b.v
	}
	if a.c == b.c {
		return true
	}
	return a.Digest() == b.Digest()
}
