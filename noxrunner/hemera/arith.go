package hemera

import (
	"math/bits"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// Internal arithmetic for the permutation. Lanes are kept as "lazy"
// representatives: any uint64 x stands for x mod p, so values in [p, 2^64)
// are allowed between rounds and only the outputs are canonicalised. This
// removes a compare-and-select from every multiply on the inversion chain,
// which is the latency-critical path of the whole permutation. Everything is
// branch-free because the carries are data-dependent and would mispredict.
//
// Equality with the canonical field package is asserted by arith_test.go.

// eps is 2^64 mod p.
const eps = 0xFFFFFFFF

// red folds hi·2^64 + lo (any 128-bit value) to a lazy representative using
// 2^64 ≡ eps and 2^96 ≡ −1: with hi = b·2^32 + a the value is lo − b + a·eps.
// The two carry corrections are applied together at the end instead of one
// after the other, which shortens the dependency chain that every squaring
// in the inversion waits on; a·eps is a shift and subtract for the same
// reason (a multiply would add latency). uint64(uint32(−c)) turns a carry
// into eps with one SBB and a zero-extending move, a cycle shorter than
// masking with eps.
func red(hi, lo uint64) uint64 {
	t1 := hi<<32 - uint64(uint32(hi)) // (hi mod 2^32)·eps
	r1, borrow := bits.Sub64(lo, hi>>32, 0)
	r2, carry := bits.Add64(r1, t1, 0)
	// The intended result r2 + eps·(carry − borrow) lies in [0, 2^64):
	// borrow alone leaves r2 ≥ r1 ≥ 2^64 − 2^32 + 1, carry alone leaves
	// r2 < t1 ≤ 2^64 − 2^33 + 1, and both cancel. So wrapping arithmetic
	// below yields exactly that value.
	return r2 - uint64(uint32(-borrow)) + uint64(uint32(-carry))
}

// mul returns a lazy representative of a·b for lazy a, b.
func mul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return red(hi, lo)
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
	r, carry := bits.Add64(lo, hi<<32-hi, 0) // hi·eps without a multiply
	// After a carry r < hi·eps < 2^64 − eps, so the correction cannot wrap.
	return r + uint64(uint32(-carry))
}

// sqn squares x n times.
func sqn(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x = mul(x, x)
	}
	return x
}

// inv returns x^(p−2), i.e. x^(−1) with 0 ↦ 0, for the partial-round S-box.
// p − 2 = 0xFFFFFFFE_FFFFFFFF = (2^31 − 1)·2^33 + (2^32 − 1), reached through
// x^(2^k − 1) for k = 2, 3, 6, 12, 24, 30, 31, 32: 64 squarings and 9
// multiplications instead of the 127 operations of plain square-and-multiply.
func inv(x uint64) uint64 {
	t2 := mul(mul(x, x), x)
	t3 := mul(mul(t2, t2), x)
	t6 := mul(sqn(t3, 3), t3)
	t12 := mul(sqn(t6, 6), t6)
	t24 := mul(sqn(t12, 12), t12)
	t30 := mul(sqn(t24, 6), t6)
	t31 := mul(mul(t30, t30), x)
	t32 := mul(mul(t31, t31), x)
	return mul(sqn(t31, 33), t32)
}

// canon maps a lazy representative to the canonical one.
func canon(x uint64) uint64 { return field.Reduce(x) }
