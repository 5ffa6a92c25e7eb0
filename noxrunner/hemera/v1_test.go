package hemera

import (
	"math/bits"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// The permutation as it was before the projective partial rounds (one
// Fermat inversion per partial round, interleaved with the lane updates),
// kept verbatim apart from the V1 suffix: a second reference for the tests
// and the "old" side of the benchmarks, so old/new ratios come from one run.

// red folds hi·2^64 + lo (any 128-bit value) to a lazy representative using
// 2^64 ≡ eps and 2^96 ≡ −1: with hi = b·2^32 + a the value is lo − b + a·eps.
// The two carry corrections are applied together at the end instead of one
// after the other, which shortens the dependency chain that every squaring
// in the inversion waits on; a·eps is a shift and subtract for the same
// reason (a multiply would add latency). uint64(uint32(−c)) turns a carry
// into eps with one SBB and a zero-extending move, a cycle shorter than
// masking with eps.
func redV1(hi, lo uint64) uint64 {
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
func mulV1(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return redV1(hi, lo)
}

// addC returns a lazy representative of x + c for lazy x and canonical c.
// With c < p the corrected sum after a carry is below p + eps = 2^64, so one
// correction is enough.
func addCV1(x, c uint64) uint64 {
	s, carry := bits.Add64(x, c, 0)
	return s + uint64(uint32(-carry))
}

// redSmall folds hi·2^64 + lo for a small hi (< 2^32), the shape produced by
// the linear layers' exact integer sums.
func redSmallV1(hi, lo uint64) uint64 {
	r, carry := bits.Add64(lo, hi<<32-hi, 0) // hi·eps without a multiply
	// After a carry r < hi·eps < 2^64 − eps, so the correction cannot wrap.
	return r + uint64(uint32(-carry))
}

// sqn squares x n times.
func sqnV1(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x = mulV1(x, x)
	}
	return x
}

// inv returns x^(p−2), i.e. x^(−1) with 0 ↦ 0, for the partial-round S-box.
// p − 2 = 0xFFFFFFFE_FFFFFFFF = (2^31 − 1)·2^33 + (2^32 − 1), reached through
// x^(2^k − 1) for k = 2, 3, 6, 12, 24, 30, 31, 32: 64 squarings and 9
// multiplications instead of the 127 operations of plain square-and-multiply.
func invV1(x uint64) uint64 {
	t2 := mulV1(mulV1(x, x), x)
	t3 := mulV1(mulV1(t2, t2), x)
	t6 := mulV1(sqnV1(t3, 3), t3)
	t12 := mulV1(sqnV1(t6, 6), t6)
	t24 := mulV1(sqnV1(t12, 12), t12)
	t30 := mulV1(sqnV1(t24, 6), t6)
	t31 := mulV1(mulV1(t30, t30), x)
	t32 := mulV1(mulV1(t31, t31), x)
	return mulV1(sqnV1(t31, 33), t32)
}

// canon maps a lazy representative to the canonical one.
func canonV1(x uint64) uint64 { return field.Reduce(x) }

// permute is Permute with the constant table as a parameter, so tests can run
// the optimised code as Hemera₀ (all constants zero) during the bootstrap.
func permuteV1(s *State, rc *[144]uint64) {
	x := *s
	externalV1(&x)
	for r := 0; r < 4; r++ {
		fullRoundV1(&x, (*[Width]uint64)(rc[16*r:]))
	}
	partialRoundsV1(&x, (*[16]uint64)(rc[128:]))
	for r := 4; r < 8; r++ {
		fullRoundV1(&x, (*[Width]uint64)(rc[16*r:]))
	}
	for i := range x {
		s[i] = canonV1(x[i])
	}
}

// fullRound adds the round constants, applies x^7 to every lane and then the
// external matrix. The S-box is written out in the loop body (a helper would
// be too large for the inliner) so no call boundary forces the lanes through the
// stack; the 16 lanes are independent, which keeps the multiplier busy.
func fullRoundV1(x *State, c *[Width]uint64) {
	for i := range x {
		v := addCV1(x[i], c[i])
		v2 := mulV1(v, v)
		v3 := mulV1(v2, v)
		v4 := mulV1(v2, v2)
		x[i] = mulV1(v3, v4)
	}
	externalV1(x)
}

// partialRounds runs the 16 partial rounds: x^(−1) on lane 0, then the
// internal matrix. The inversion is a ~70-deep chain of dependent
// multiplications and dominates the whole permutation, so the rounds are
// arranged to keep that chain busy:
//
//   - lane 0 of the next round only needs y = x0^(−1) and P, the sum of
//     lanes 1..15 before the update: x0' + c' = (d0+1)·y + (P + c'). P + c'
//     is ready early, so only one multiply-reduce separates two inversions.
//   - lanes 1..15 of round r are updated while the inversion of round r+1
//     runs (invLanes interleaves them with the chain), instead of sitting in
//     front of it and competing for the multiplier.
func partialRoundsV1(x *State, c *[16]uint64) {
	ph, pl := wV1(x[1], x[2])
	for i := 3; i < Width; i++ {
		ph, pl = waV1(ph, pl, x[i])
	}
	a := addCV1(x[0], c[0])
	y := invV1(a)
	sum, a := nextLane0V1(y, ph, pl, c[1])
	for r := 1; r < 16; r++ {
		y, ph, pl = invLanesV1(a, x, sum)
		var cn uint64 // the constant of the next round, none after the last
		if r < 15 {
			cn = c[r+1]
		}
		sum, a = nextLane0V1(y, ph, pl, cn)
	}
	d := &internalDiag
	for i := 1; i < Width; i++ {
		x[i] = mulAddV1(d[i], x[i], sum)
	}
	// With cn = 0, a is d0·y + sum: the final lane 0.
	x[0] = a
}

// diag0p1V1 is d0 + 1, folding the "+ y" of the round sum into lane 0's
// diagonal coefficient (checked against internalDiag by the tests).
const diag0p1V1 = 0xde9b91a467d6afc1

// nextLane0 finishes a partial round given y (the inverted lane 0) and
// (ph, pl) = P, the exact sum of lanes 1..15. It returns the round sum
// y + P and lane 0 of the next round with that round's constant cn added.
func nextLane0V1(y, ph, pl, cn uint64) (sum, a uint64) {
	sum = redSmallV1(waV1(ph, pl, y))
	a = mulAddV1(diag0p1V1, y, redSmallV1(waV1(ph, pl, cn)))
	return sum, a
}

// invLanes returns y = a^(−1) (the chain of inv) while applying the previous
// round's internal-matrix update x[i] = d_i·x[i] + s to lanes 1..15, and
// returns the exact sum (ph, pl) of the updated lanes. The lane updates are
// spread between the chain's segments so they enter the out-of-order window
// alongside it; the result is the same as invV1(a) followed by the updates.
func invLanesV1(a uint64, x *State, s uint64) (y, ph, pl uint64) {
	d := &internalDiag

	t2 := mulV1(mulV1(a, a), a)
	x[1] = mulAddV1(d[1], x[1], s)
	t3 := mulV1(mulV1(t2, t2), a)
	x[2] = mulAddV1(d[2], x[2], s)
	ph, pl = wV1(x[1], x[2])

	t := sqnV1(t3, 3)
	x[3] = mulAddV1(d[3], x[3], s)
	ph, pl = waV1(ph, pl, x[3])
	t6 := mulV1(t, t3)
	x[4] = mulAddV1(d[4], x[4], s)
	ph, pl = waV1(ph, pl, x[4])

	t = sqnV1(t6, 3)
	x[5] = mulAddV1(d[5], x[5], s)
	ph, pl = waV1(ph, pl, x[5])
	t = sqnV1(t, 3)
	x[6] = mulAddV1(d[6], x[6], s)
	ph, pl = waV1(ph, pl, x[6])
	t12 := mulV1(t, t6)

	t = sqnV1(t12, 3)
	x[7] = mulAddV1(d[7], x[7], s)
	ph, pl = waV1(ph, pl, x[7])
	t = sqnV1(t, 3)
	x[8] = mulAddV1(d[8], x[8], s)
	ph, pl = waV1(ph, pl, x[8])
	t = sqnV1(t, 3)
	x[9] = mulAddV1(d[9], x[9], s)
	ph, pl = waV1(ph, pl, x[9])
	t = sqnV1(t, 3)
	x[10] = mulAddV1(d[10], x[10], s)
	ph, pl = waV1(ph, pl, x[10])
	t24 := mulV1(t, t12)

	t = sqnV1(t24, 3)
	x[11] = mulAddV1(d[11], x[11], s)
	ph, pl = waV1(ph, pl, x[11])
	t = sqnV1(t, 3)
	x[12] = mulAddV1(d[12], x[12], s)
	ph, pl = waV1(ph, pl, x[12])
	t30 := mulV1(t, t6)

	t31 := mulV1(mulV1(t30, t30), a)
	x[13] = mulAddV1(d[13], x[13], s)
	ph, pl = waV1(ph, pl, x[13])
	t32 := mulV1(mulV1(t31, t31), a)
	x[14] = mulAddV1(d[14], x[14], s)
	ph, pl = waV1(ph, pl, x[14])

	t = sqnV1(t31, 3)
	x[15] = mulAddV1(d[15], x[15], s)
	ph, pl = waV1(ph, pl, x[15])
	t = sqnV1(t, 30)
	return mulV1(t, t32), ph, pl
}

// mulAdd returns a lazy representative of a·b + c. The product's high word
// is at most 2^64 − 2^32 − 1, so absorbing the carry of + c cannot overflow.
func mulAddV1(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	lo, carry := bits.Add64(lo, c, 0)
	return redV1(hi+carry, lo)
}

// The linear layers are computed as exact integer sums held in (hi, lo)
// pairs and reduced once per output lane: every output is a combination of
// inputs with total coefficient 35, so hi stays below 35 and a single small
// fold (redSmall) replaces a chain of modular additions.

// w returns a + b as a (hi, lo) pair.
func wV1(a, b uint64) (uint64, uint64) {
	lo, carry := bits.Add64(a, b, 0)
	return carry, lo
}

// wa adds a single word to a (hi, lo) pair.
func waV1(h, l, a uint64) (uint64, uint64) {
	l, carry := bits.Add64(l, a, 0)
	return h + carry, l
}

// ww adds two (hi, lo) pairs.
func wwV1(h1, l1, h2, l2 uint64) (uint64, uint64) {
	l, carry := bits.Add64(l1, l2, 0)
	h, _ := bits.Add64(h1, h2, carry)
	return h, l
}

// m4 multiplies one 4-lane chunk by M4. Row i of M4 is s + x_i + 2·x_(i+1)
// with s the chunk sum; the grouping below shares the partial sums.
func m4V1(a, b, c, d uint64) (y0h, y0l, y1h, y1l, y2h, y2l, y3h, y3l uint64) {
	abH, abL := wV1(a, b)
	cdH, cdL := wV1(c, d)
	sH, sL := wwV1(abH, abL, cdH, cdL)
	sbH, sbL := waV1(sH, sL, b)
	sdH, sdL := waV1(sH, sL, d)
	y0h, y0l = wwV1(sbH, sbL, abH, abL)
	y1h, y1l = wwV1(sbH, sbL, c>>63, c<<1)
	y2h, y2l = wwV1(sdH, sdL, cdH, cdL)
	y3h, y3l = wwV1(sdH, sdL, a>>63, a<<1)
	return
}

// external applies the external matrix: M4 on each chunk, then lane i gains
// the sum over chunks of lane i mod 4.
func externalV1(x *State) {
	a0h, a0l, a1h, a1l, a2h, a2l, a3h, a3l := m4V1(x[0], x[1], x[2], x[3])
	b0h, b0l, b1h, b1l, b2h, b2l, b3h, b3l := m4V1(x[4], x[5], x[6], x[7])
	c0h, c0l, c1h, c1l, c2h, c2l, c3h, c3l := m4V1(x[8], x[9], x[10], x[11])
	d0h, d0l, d1h, d1l, d2h, d2l, d3h, d3l := m4V1(x[12], x[13], x[14], x[15])

	s0h, s0l := wwV1(a0h, a0l, b0h, b0l)
	s0h, s0l = wwV1(s0h, s0l, c0h, c0l)
	s0h, s0l = wwV1(s0h, s0l, d0h, d0l)
	s1h, s1l := wwV1(a1h, a1l, b1h, b1l)
	s1h, s1l = wwV1(s1h, s1l, c1h, c1l)
	s1h, s1l = wwV1(s1h, s1l, d1h, d1l)
	s2h, s2l := wwV1(a2h, a2l, b2h, b2l)
	s2h, s2l = wwV1(s2h, s2l, c2h, c2l)
	s2h, s2l = wwV1(s2h, s2l, d2h, d2l)
	s3h, s3l := wwV1(a3h, a3l, b3h, b3l)
	s3h, s3l = wwV1(s3h, s3l, c3h, c3l)
	s3h, s3l = wwV1(s3h, s3l, d3h, d3l)

	x[0] = redSmallV1(wwV1(a0h, a0l, s0h, s0l))
	x[1] = redSmallV1(wwV1(a1h, a1l, s1h, s1l))
	x[2] = redSmallV1(wwV1(a2h, a2l, s2h, s2l))
	x[3] = redSmallV1(wwV1(a3h, a3l, s3h, s3l))
	x[4] = redSmallV1(wwV1(b0h, b0l, s0h, s0l))
	x[5] = redSmallV1(wwV1(b1h, b1l, s1h, s1l))
	x[6] = redSmallV1(wwV1(b2h, b2l, s2h, s2l))
	x[7] = redSmallV1(wwV1(b3h, b3l, s3h, s3l))
	x[8] = redSmallV1(wwV1(c0h, c0l, s0h, s0l))
	x[9] = redSmallV1(wwV1(c1h, c1l, s1h, s1l))
	x[10] = redSmallV1(wwV1(c2h, c2l, s2h, s2l))
	x[11] = redSmallV1(wwV1(c3h, c3l, s3h, s3l))
	x[12] = redSmallV1(wwV1(d0h, d0l, s0h, s0l))
	x[13] = redSmallV1(wwV1(d1h, d1l, s1h, s1l))
	x[14] = redSmallV1(wwV1(d2h, d2l, s2h, s2l))
	x[15] = redSmallV1(wwV1(d3h, d3l, s3h, s3l))
}
