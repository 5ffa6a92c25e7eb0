package hemera

import (
	"math/bits"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// Internal arithmetic for the permutation. Lanes are kept as "lazy"
// representatives: any uint64 x stands for x mod p, so values in [p, 2^64)
// are allowed between rounds and only the outputs are canonicalised, which
// saves a compare-and-select on every multiply. Everything is branch-free
// because the carries are data-dependent and would mispredict.
//
// The permutation is bound by how many instructions its ~1,100
// multiplications take more than by their latency (the partial rounds are
// projective, see partial.go), so these helpers are written for the fewest
// instructions. Not wholly: one permutation's chains still leave the core
// idle, and two independent ones side by side (Permute2) take 0.6 of the
// time of two apart. Equality with the canonical field package is asserted by
// arith_test.go.

// eps is 2^64 mod p.
const eps = 0xFFFFFFFF

// red folds hi·2^64 + lo (any 128-bit value) to a lazy representative using
// 2^64 ≡ eps and 2^96 ≡ −1: with hi = h1·2^32 + h0 the value is
// lo − h1 + h0·eps. The borrow and carry corrections are applied together
// at the end; uint64(uint32(−c)) turns a carry into eps with one SBB and a
// zero-extending move.
func red(hi, lo uint64) uint64 {
	t := uint64(uint32(hi)) * eps // h0·eps < 2^64: one IMUL, fewer µops than shifts
	r1, borrow := bits.Sub64(lo, hi>>32, 0)
	r2, carry := bits.Add64(r1, t, 0)
	// The intended result r2 + eps·(carry − borrow) lies in [0, 2^64): a
	// borrow alone leaves r2 ≥ r1 ≥ 2^64 − 2^32 + 1, a carry alone leaves
	// r2 < t ≤ 2^64 − 2^33 + 1, and both cancel. So wrapping arithmetic
	// below yields exactly that value.
	return r2 - uint64(uint32(-borrow)) + uint64(uint32(-carry))
}

// mul returns a lazy representative of a·b for lazy a, b.
func mul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return red(hi, lo)
}

// mulAdd returns a lazy representative of a·b + c for lazy a, b, c. The
// product's high word is at most 2^64 − 2, and it is 2^64 − 2 only with a
// low word of 1, so absorbing the carry of + c cannot overflow.
func mulAdd(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	lo, carry := bits.Add64(lo, c, 0)
	return red(hi+carry, lo)
}

// addC returns a lazy representative of x + c for lazy x and canonical c.
// With c < p the corrected sum after a carry is below p + eps = 2^64, so one
// correction is enough.
func addC(x, c uint64) uint64 {
	s, carry := bits.Add64(x, c, 0)
	return s + uint64(uint32(-carry))
}

// redSmall folds hi·2^64 + lo for a small hi (< 2^32), the shape produced by
// the linear layers' exact integer sums.
func redSmall(hi, lo uint64) uint64 {
	r, carry := bits.Add64(lo, hi*eps, 0)
	// After a carry r < hi·eps < 2^64 − eps, so the correction cannot wrap.
	return r + uint64(uint32(-carry))
}

// canon maps a lazy representative to the canonical one.
func canon(x uint64) uint64 { return field.Reduce(x) }

// isZero reports whether the lazy x stands for 0 (0 and p are the only
// representatives below 2^64).
func isZero(x uint64) bool { return x == 0 || x == field.P }

// The linear layers are computed as exact integer sums held in (hi, lo)
// pairs and reduced once per output lane.

// wa adds a word to a (hi, lo) pair.
func wa(h, l, a uint64) (uint64, uint64) {
	l, carry := bits.Add64(l, a, 0)
	h, _ = bits.Add64(h, 0, carry)
	return h, l
}

// ww adds two (hi, lo) pairs.
func ww(h1, l1, h2, l2 uint64) (uint64, uint64) {
	l, carry := bits.Add64(l1, l2, 0)
	h, _ := bits.Add64(h1, h2, carry)
	return h, l
}
