package hemera

import "math/bits"

// Permute applies the Hemera permutation (§3.3) to s in place. Input lanes
// are read modulo p, so non-canonical values are accepted; every output lane
// is canonical.
func Permute(s *State) { permute(s, &roundConstants) }

// permute is Permute with the constant table as a parameter, so tests can run
// the optimised code as Hemera₀ (all constants zero) during the bootstrap.
func permute(s *State, rc *[144]uint64) {
	x := *s
	external(&x)
	for r := 0; r < 4; r++ {
		fullRound(&x, (*[Width]uint64)(rc[16*r:]))
	}
	partialRounds(&x, (*[16]uint64)(rc[128:]))
	for r := 4; r < 8; r++ {
		fullRound(&x, (*[Width]uint64)(rc[16*r:]))
	}
	for i := range x {
		s[i] = canon(x[i])
	}
}

// fullRound adds the round constants, applies x^7 to every lane and then the
// external matrix. The S-box is written out in the loop body (a helper would
// be too large for the inliner) so no call boundary forces the lanes through the
// stack; the 16 lanes are independent, which keeps the multiplier busy.
func fullRound(x *State, c *[Width]uint64) {
	for i := range x {
		v := addC(x[i], c[i])
		v2 := mul(v, v)
		v3 := mul(v2, v)
		v4 := mul(v2, v2)
		x[i] = mul(v3, v4)
	}
	external(x)
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
func partialRounds(x *State, c *[16]uint64) {
	ph, pl := w(x[1], x[2])
	for i := 3; i < Width; i++ {
		ph, pl = wa(ph, pl, x[i])
	}
	a := addC(x[0], c[0])
	y := inv(a)
	sum, a := nextLane0(y, ph, pl, c[1])
	for r := 1; r < 16; r++ {
		y, ph, pl = invLanes(a, x, sum)
		var cn uint64 // the constant of the next round, none after the last
		if r < 15 {
			cn = c[r+1]
		}
		sum, a = nextLane0(y, ph, pl, cn)
	}
	d := &internalDiag
	for i := 1; i < Width; i++ {
		x[i] = mulAdd(d[i], x[i], sum)
	}
	// With cn = 0, a is d0·y + sum: the final lane 0.
	x[0] = a
}

// diag0p1 is d0 + 1, folding the "+ y" of the round sum into lane 0's
// diagonal coefficient (checked against internalDiag by the tests).
const diag0p1 = 0xde9b91a467d6afc1

// nextLane0 finishes a partial round given y (the inverted lane 0) and
// (ph, pl) = P, the exact sum of lanes 1..15. It returns the round sum
// y + P and lane 0 of the next round with that round's constant cn added.
func nextLane0(y, ph, pl, cn uint64) (sum, a uint64) {
	sum = redSmall(wa(ph, pl, y))
	a = mulAdd(diag0p1, y, redSmall(wa(ph, pl, cn)))
	return sum, a
}

// invLanes returns y = a^(−1) (the chain of inv) while applying the previous
// round's internal-matrix update x[i] = d_i·x[i] + s to lanes 1..15, and
// returns the exact sum (ph, pl) of the updated lanes. The lane updates are
// spread between the chain's segments so they enter the out-of-order window
// alongside it; the result is the same as inv(a) followed by the updates.
func invLanes(a uint64, x *State, s uint64) (y, ph, pl uint64) {
	d := &internalDiag

	t2 := mul(mul(a, a), a)
	x[1] = mulAdd(d[1], x[1], s)
	t3 := mul(mul(t2, t2), a)
	x[2] = mulAdd(d[2], x[2], s)
	ph, pl = w(x[1], x[2])

	t := sqn(t3, 3)
	x[3] = mulAdd(d[3], x[3], s)
	ph, pl = wa(ph, pl, x[3])
	t6 := mul(t, t3)
	x[4] = mulAdd(d[4], x[4], s)
	ph, pl = wa(ph, pl, x[4])

	t = sqn(t6, 3)
	x[5] = mulAdd(d[5], x[5], s)
	ph, pl = wa(ph, pl, x[5])
	t = sqn(t, 3)
	x[6] = mulAdd(d[6], x[6], s)
	ph, pl = wa(ph, pl, x[6])
	t12 := mul(t, t6)

	t = sqn(t12, 3)
	x[7] = mulAdd(d[7], x[7], s)
	ph, pl = wa(ph, pl, x[7])
	t = sqn(t, 3)
	x[8] = mulAdd(d[8], x[8], s)
	ph, pl = wa(ph, pl, x[8])
	t = sqn(t, 3)
	x[9] = mulAdd(d[9], x[9], s)
	ph, pl = wa(ph, pl, x[9])
	t = sqn(t, 3)
	x[10] = mulAdd(d[10], x[10], s)
	ph, pl = wa(ph, pl, x[10])
	t24 := mul(t, t12)

	t = sqn(t24, 3)
	x[11] = mulAdd(d[11], x[11], s)
	ph, pl = wa(ph, pl, x[11])
	t = sqn(t, 3)
	x[12] = mulAdd(d[12], x[12], s)
	ph, pl = wa(ph, pl, x[12])
	t30 := mul(t, t6)

	t31 := mul(mul(t30, t30), a)
	x[13] = mulAdd(d[13], x[13], s)
	ph, pl = wa(ph, pl, x[13])
	t32 := mul(mul(t31, t31), a)
	x[14] = mulAdd(d[14], x[14], s)
	ph, pl = wa(ph, pl, x[14])

	t = sqn(t31, 3)
	x[15] = mulAdd(d[15], x[15], s)
	ph, pl = wa(ph, pl, x[15])
	t = sqn(t, 30)
	return mul(t, t32), ph, pl
}

// mulAdd returns a lazy representative of a·b + c. The product's high word
// is at most 2^64 − 2^32 − 1, so absorbing the carry of + c cannot overflow.
func mulAdd(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	lo, carry := bits.Add64(lo, c, 0)
	return red(hi+carry, lo)
}

// The linear layers are computed as exact integer sums held in (hi, lo)
// pairs and reduced once per output lane: every output is a combination of
// inputs with total coefficient 35, so hi stays below 35 and a single small
// fold (redSmall) replaces a chain of modular additions.

// w returns a + b as a (hi, lo) pair.
func w(a, b uint64) (uint64, uint64) {
	lo, carry := bits.Add64(a, b, 0)
	return carry, lo
}

// wa adds a single word to a (hi, lo) pair.
func wa(h, l, a uint64) (uint64, uint64) {
	l, carry := bits.Add64(l, a, 0)
	return h + carry, l
}

// ww adds two (hi, lo) pairs.
func ww(h1, l1, h2, l2 uint64) (uint64, uint64) {
	l, carry := bits.Add64(l1, l2, 0)
	h, _ := bits.Add64(h1, h2, carry)
	return h, l
}

// m4 multiplies one 4-lane chunk by M4. Row i of M4 is s + x_i + 2·x_(i+1)
// with s the chunk sum; the grouping below shares the partial sums.
func m4(a, b, c, d uint64) (y0h, y0l, y1h, y1l, y2h, y2l, y3h, y3l uint64) {
	abH, abL := w(a, b)
	cdH, cdL := w(c, d)
	sH, sL := ww(abH, abL, cdH, cdL)
	sbH, sbL := wa(sH, sL, b)
	sdH, sdL := wa(sH, sL, d)
	y0h, y0l = ww(sbH, sbL, abH, abL)
	y1h, y1l = ww(sbH, sbL, c>>63, c<<1)
	y2h, y2l = ww(sdH, sdL, cdH, cdL)
	y3h, y3l = ww(sdH, sdL, a>>63, a<<1)
	return
}

// external applies the external matrix: M4 on each chunk, then lane i gains
// the sum over chunks of lane i mod 4.
func external(x *State) {
	a0h, a0l, a1h, a1l, a2h, a2l, a3h, a3l := m4(x[0], x[1], x[2], x[3])
	b0h, b0l, b1h, b1l, b2h, b2l, b3h, b3l := m4(x[4], x[5], x[6], x[7])
	c0h, c0l, c1h, c1l, c2h, c2l, c3h, c3l := m4(x[8], x[9], x[10], x[11])
	d0h, d0l, d1h, d1l, d2h, d2l, d3h, d3l := m4(x[12], x[13], x[14], x[15])

	s0h, s0l := ww(a0h, a0l, b0h, b0l)
	s0h, s0l = ww(s0h, s0l, c0h, c0l)
	s0h, s0l = ww(s0h, s0l, d0h, d0l)
	s1h, s1l := ww(a1h, a1l, b1h, b1l)
	s1h, s1l = ww(s1h, s1l, c1h, c1l)
	s1h, s1l = ww(s1h, s1l, d1h, d1l)
	s2h, s2l := ww(a2h, a2l, b2h, b2l)
	s2h, s2l = ww(s2h, s2l, c2h, c2l)
	s2h, s2l = ww(s2h, s2l, d2h, d2l)
	s3h, s3l := ww(a3h, a3l, b3h, b3l)
	s3h, s3l = ww(s3h, s3l, c3h, c3l)
	s3h, s3l = ww(s3h, s3l, d3h, d3l)

	x[0] = redSmall(ww(a0h, a0l, s0h, s0l))
	x[1] = redSmall(ww(a1h, a1l, s1h, s1l))
	x[2] = redSmall(ww(a2h, a2l, s2h, s2l))
	x[3] = redSmall(ww(a3h, a3l, s3h, s3l))
	x[4] = redSmall(ww(b0h, b0l, s0h, s0l))
	x[5] = redSmall(ww(b1h, b1l, s1h, s1l))
	x[6] = redSmall(ww(b2h, b2l, s2h, s2l))
	x[7] = redSmall(ww(b3h, b3l, s3h, s3l))
	x[8] = redSmall(ww(c0h, c0l, s0h, s0l))
	x[9] = redSmall(ww(c1h, c1l, s1h, s1l))
	x[10] = redSmall(ww(c2h, c2l, s2h, s2l))
	x[11] = redSmall(ww(c3h, c3l, s3h, s3l))
	x[12] = redSmall(ww(d0h, d0l, s0h, s0l))
	x[13] = redSmall(ww(d1h, d1l, s1h, s1l))
	x[14] = redSmall(ww(d2h, d2l, s2h, s2l))
	x[15] = redSmall(ww(d3h, d3l, s3h, s3l))
}
