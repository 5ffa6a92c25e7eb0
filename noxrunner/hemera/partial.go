package hemera

import "github.com/cyberia-to/cyber-supervisor/noxrunner/field"

// partialRounds runs the 16 partial rounds: lane 0 gets its constant and
// x^(−1) (0 ↦ 0), then the internal matrix x_i ← d_i·x_i + Σ_j x_j.
//
// Done literally, each round waits for one field inversion of the previous
// round's lane 0, and those 16 inversions in a row were 80 % of the whole
// permutation. Instead the state is kept projective: lane i holds X_i with
// x_i = X_i / Z for one common denominator Z, and inverting lane 0 swaps a
// numerator and a denominator. With A = X_0 + c·Z (lane 0 plus its
// constant, over Z):
//
//	x_0^(−1) = Z/A = Z²/(Z·A) and x_i = X_i·A/(Z·A),
//
// so the round sets Z ← Z·A, X_0 ← Z², X_i ← A·X_i, and the internal matrix
// acts on the numerators alone (it is linear): with P = Σ_{i≥1} X_i the new
// sum is S = Z² + A·P, X_0 ← d_0·Z² + S and X_i ← A·(d_i·X_i) + S. That is
// 35 multiplications a round instead of 15 plus an inversion, but they are
// independent of each other, so the round runs at the multiplier's
// throughput rather than at the latency of a 64-step chain; one inversion
// of Z at the end brings the lanes back.
//
// When A stands for 0 the S-box maps lane 0 to 0 and nothing is inverted:
// X_0 ← 0 with Z kept. This cannot be left out — a caller can choose an
// input whose lane 0 hits −c in some round by running the rounds before it
// backwards — and the tests construct such inputs for every round.
func partialRounds(x *State, c *[16]uint64) {
	var z uint64
	if haveSIMD {
		z = projectiveRoundsSIMD(x, c)
	} else {
		z = projectiveRounds(x, c)
	}
	zi := field.Inv(canon(z))
	for i := range x {
		x[i] = mul(x[i], zi)
	}
}

// projectiveRounds runs the 16 rounds on the numerators and returns the
// denominator Z; the lanes are left as X_i with x_i = X_i / Z. Z is never
// 0: it is a product of non-zero A's.
func projectiveRounds(x *State, c *[16]uint64) uint64 {
	d := &internalDiag
	z := uint64(1)
	// p: the sum of lanes 1..15.
	var ph, pl uint64
	for i := 1; i < Width; i++ {
		ph, pl = wa(ph, pl, x[i])
	}
	p := redSmall(ph, pl)
	for r := range c {
		a := mulAdd(c[r], z, x[0])
		if isZero(a) {
			// Lane 0 becomes 0 over the same Z, so the round sum is P:
			// x_0 ← P and x_i ← d_i·x_i + P.
			x0 := p
			p = redSmall(scaleLanes(x, 1, canon(p)))
			x[0] = x0
			continue
		}
		z2 := mul(z, z)
		s := mulAdd(a, p, z2)
		x0 := mulAdd(d[0], z2, s)
		p = redSmall(scaleLanes(x, a, canon(s)))
		x[0] = x0
		z = mul(z, a)
	}
	return z
}

// scaleLanes sets x_i ← a·(d_i·x_i) + s for lanes 1..15 and returns their
// exact sum. It is written out lane by lane: as a loop the index arithmetic
// and the spills it forces cost as much as the multiplications.
func scaleLanes(x *State, a, s uint64) (ph, pl uint64) {
	d := &internalDiag
	x[1] = mulAdd(a, mul(d[1], x[1]), s)
	pl = x[1]
	x[2] = mulAdd(a, mul(d[2], x[2]), s)
	ph, pl = wa(ph, pl, x[2])
	x[3] = mulAdd(a, mul(d[3], x[3]), s)
	ph, pl = wa(ph, pl, x[3])
	x[4] = mulAdd(a, mul(d[4], x[4]), s)
	ph, pl = wa(ph, pl, x[4])
	x[5] = mulAdd(a, mul(d[5], x[5]), s)
	ph, pl = wa(ph, pl, x[5])
	x[6] = mulAdd(a, mul(d[6], x[6]), s)
	ph, pl = wa(ph, pl, x[6])
	x[7] = mulAdd(a, mul(d[7], x[7]), s)
	ph, pl = wa(ph, pl, x[7])
	x[8] = mulAdd(a, mul(d[8], x[8]), s)
	ph, pl = wa(ph, pl, x[8])
	x[9] = mulAdd(a, mul(d[9], x[9]), s)
	ph, pl = wa(ph, pl, x[9])
	x[10] = mulAdd(a, mul(d[10], x[10]), s)
	ph, pl = wa(ph, pl, x[10])
	x[11] = mulAdd(a, mul(d[11], x[11]), s)
	ph, pl = wa(ph, pl, x[11])
	x[12] = mulAdd(a, mul(d[12], x[12]), s)
	ph, pl = wa(ph, pl, x[12])
	x[13] = mulAdd(a, mul(d[13], x[13]), s)
	ph, pl = wa(ph, pl, x[13])
	x[14] = mulAdd(a, mul(d[14], x[14]), s)
	ph, pl = wa(ph, pl, x[14])
	x[15] = mulAdd(a, mul(d[15], x[15]), s)
	ph, pl = wa(ph, pl, x[15])
	return ph, pl
}
