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
// external matrix.
func fullRound(x *State, c *[Width]uint64) {
	x[0] = pow7(addC(x[0], c[0]))
	x[1] = pow7(addC(x[1], c[1]))
	x[2] = pow7(addC(x[2], c[2]))
	x[3] = pow7(addC(x[3], c[3]))
	x[4] = pow7(addC(x[4], c[4]))
	x[5] = pow7(addC(x[5], c[5]))
	x[6] = pow7(addC(x[6], c[6]))
	x[7] = pow7(addC(x[7], c[7]))
	x[8] = pow7(addC(x[8], c[8]))
	x[9] = pow7(addC(x[9], c[9]))
	x[10] = pow7(addC(x[10], c[10]))
	x[11] = pow7(addC(x[11], c[11]))
	x[12] = pow7(addC(x[12], c[12]))
	x[13] = pow7(addC(x[13], c[13]))
	x[14] = pow7(addC(x[14], c[14]))
	x[15] = pow7(addC(x[15], c[15]))
	external(x)
}

// partialRounds runs the 16 partial rounds: x^(−1) on lane 0, then the
// internal matrix.
func partialRounds(x *State, c *[16]uint64) {
	d := &internalDiag
	for r := 0; r < 16; r++ {
		// The sum of lanes 1..15 does not depend on the inversion; computing
		// it first lets it overlap with the inversion's long dependency chain.
		h, l := w(x[1], x[2])
		h, l = wa(h, l, x[3])
		h, l = wa(h, l, x[4])
		h, l = wa(h, l, x[5])
		h, l = wa(h, l, x[6])
		h, l = wa(h, l, x[7])
		h, l = wa(h, l, x[8])
		h, l = wa(h, l, x[9])
		h, l = wa(h, l, x[10])
		h, l = wa(h, l, x[11])
		h, l = wa(h, l, x[12])
		h, l = wa(h, l, x[13])
		h, l = wa(h, l, x[14])
		h, l = wa(h, l, x[15])
		x0 := inv(addC(x[0], c[r]))
		h, l = wa(h, l, x0)
		sum := redSmall(h, l)
		x[0] = mulAdd(d[0], x0, sum)
		x[1] = mulAdd(d[1], x[1], sum)
		x[2] = mulAdd(d[2], x[2], sum)
		x[3] = mulAdd(d[3], x[3], sum)
		x[4] = mulAdd(d[4], x[4], sum)
		x[5] = mulAdd(d[5], x[5], sum)
		x[6] = mulAdd(d[6], x[6], sum)
		x[7] = mulAdd(d[7], x[7], sum)
		x[8] = mulAdd(d[8], x[8], sum)
		x[9] = mulAdd(d[9], x[9], sum)
		x[10] = mulAdd(d[10], x[10], sum)
		x[11] = mulAdd(d[11], x[11], sum)
		x[12] = mulAdd(d[12], x[12], sum)
		x[13] = mulAdd(d[13], x[13], sum)
		x[14] = mulAdd(d[14], x[14], sum)
		x[15] = mulAdd(d[15], x[15], sum)
	}
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
