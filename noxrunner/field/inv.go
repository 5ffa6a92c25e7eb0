package field

import "math/bits"

// Inv returns the multiplicative inverse of a; Inv(0) = 0, matching the
// reference (nox rejects zero before it gets here, hemera's partial S-box
// relies on it).
//
// It is a binary extended GCD of (P, a) rather than Fermat's a^(P−2): a
// chain of 64 dependent squarings cannot go below ~64 multiply latencies,
// while the GCD needs about 45 short steps (subtract, count trailing
// zeros, shift). The invariants, for the two values x, y (odd) with their
// coefficients cx, cy and a shift count k:
//
//	x·2^k ≡ ∓cx·a and y·2^k ≡ ±cy·a (mod P), with opposite signs,
//	x·cy + y·cx = P, all terms non-negative.
//
// Each step replaces the larger value by |x − y| / 2^t (t its trailing
// zeros), gives it the coefficient cx + cy, and doubles the other
// coefficient t times. The second invariant keeps every coefficient ≤ P, so
// nothing overflows, and x·y·2^k never grows, so k < 128. The steps end at
// x = y = 1, where 2^k ≡ c·a for the coefficient on the positive side, and
// a^(−1) = c·2^(−k). The step is branch-free (a mask selects the larger
// value); only the loop's exit depends on the data. On amd64 the loop is
// also written in assembly (inv_amd64.s), for instructions Go does not
// emit for it; both are tested against each other.
func Inv(a uint64) uint64 {
	if a == 0 {
		return 0
	}
	var c, k uint64
	if haveBMI {
		c, k = gcdStepsFast(a)
	} else {
		c, k = gcdSteps(a)
	}
	return Mul(c, pow2Inv[k&127])
}

// gcdSteps runs the GCD for a canonical, non-zero a and returns the
// coefficient c on the positive side and the shift count k, so that
// a^(−1) = c·2^(−k). On amd64 gcdStepsBMI (inv_amd64.s) is its twin.
func gcdSteps(a uint64) (c, k uint64) {
	k = uint64(bits.TrailingZeros64(a))
	// x starts as P on the negative side, y as the odd part of a on the
	// positive side; neg is all ones while x is on the positive side.
	x, cx := P, uint64(0)
	y, cy := a>>k, uint64(1)
	var neg uint64
	d, borrow := bits.Sub64(x, y, 0)
	m := -borrow
	for d != 0 {
		// m is all ones when x < y: then the roles swap.
		t := uint(bits.TrailingZeros64(d))
		x = ((d ^ m) - m) >> t // |x − y| / 2^t
		y += d & m             // min(x, y)
		c := cy ^ ((cx ^ cy) & m)
		cx += cy
		cy = c << t
		neg ^= m
		k += uint64(t)
		d, borrow = bits.Sub64(x, y, 0)
		m = -borrow
	}
	return cy ^ ((cx ^ cy) & neg), k
}

// pow2Inv[k] is 2^(−k) mod P.
var pow2Inv = func() (t [128]uint64) {
	const half = (P + 1) / 2 // 2^(−1)
	t[0] = 1
	for k := 1; k < len(t); k++ {
		t[k] = Mul(t[k-1], half)
	}
	return t
}()
