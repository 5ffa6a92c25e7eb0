package noun

import "github.com/cyberia-to/cyber-supervisor/noxrunner/hemera"

// Digest returns the structural digest of n (four field elements): an atom
// is a hemera leaf of its 8-byte value, a pair a hemera node of its
// children's digests. Pair digests are computed once and cached on the
// cell, so digesting a shared DAG costs one permutation per distinct cell.
func (n Noun) Digest() hemera.Digest {
	d, _ := n.DigestInterruptible(nil)
	return d
}

// DigestInterruptible is Digest for callers that must stay responsive
// (a single digest of a large fresh noun costs one permutation, ~5 µs,
// per distinct cell): stop is consulted every few dozen cells, and when it
// says so the digest is abandoned (ok = false); a nil stop never does.
// Work already done stays cached.
func (n Noun) DigestInterruptible(stop func() bool) (hemera.Digest, bool) {
	if n.c == nil {
		return hemera.AtomDigest(n.v), true
	}
	if n.c.flags&flagDigest != 0 {
		return n.c.digest, true
	}
	return digestSlow(n.c, stop)
}

// Particle is the 32-byte little-endian form of the digest: the noun's
// content identity.
func (n Noun) Particle() [32]byte { return n.Digest().Bytes() }

// stopEvery is how many cells are digested between calls of stop: about
// 0.2–0.5 ms of hemera work.
const stopEvery = 64

// digestSlow fills the digest caches below c without recursion, so that
// arbitrarily deep nouns cannot exhaust the stack. A non-nil stop can end
// it early (ok = false).
func digestSlow(c *Cell, stop func() bool) (hemera.Digest, bool) {
	stack := []*Cell{c}
	done := 0
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
		if done++; stop != nil && done%stopEvery == 0 && stop() {
			return hemera.Digest{}, false
		}
	}
	return c.digest, true
}

// Equal reports whether a and b have the same digest, which is nox's
// equality. Shared cells and atoms are decided without hashing.
func Equal(a, b Noun) bool {
	eq, _ := EqualInterruptible(a, b, nil)
	return eq
}

// EqualInterruptible is Equal with the stop of DigestInterruptible.
func EqualInterruptible(a, b Noun, stop func() bool) (equal, ok bool) {
	if a.c == nil || b.c == nil {
		// An atom's digest is a leaf and a pair's a node (different flags
		// in the capacity), so an atom equals only the same atom.
		return a.c == b.c && a.v == b.v, true
	}
	if a.c == b.c {
		return true, true
	}
	da, ok := a.DigestInterruptible(stop)
	if !ok {
		return false, false
	}
	db, ok := b.DigestInterruptible(stop)
	return ok && da == db, ok
}
