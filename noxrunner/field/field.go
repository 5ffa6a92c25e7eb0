// Package field implements arithmetic in the Goldilocks field
// p = 2^64 − 2^32 + 1. Every value handled here is canonical (< P); callers
// that accept outside input reduce or reject before calling in.
package field

import "math/bits"

// P is the Goldilocks prime 2^64 − 2^32 + 1.
const P uint64 = 0xFFFFFFFF00000001

// epsilon is 2^64 mod P = 2^32 − 1.
const epsilon uint64 = 0xFFFFFFFF

// Reduce maps any u64 to its canonical representative. One conditional
// subtraction suffices because 2^64 − 1 < 2P.
func Reduce(x uint64) uint64 {
	if x >= P {
		return x - P
	}
	return x
}

// Add returns a + b mod P for canonical a, b.
func Add(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	// A carry means the true sum is s + 2^64 ≡ s + epsilon; since a, b < P
	// the corrected value cannot carry again.
	if carry != 0 {
		s += epsilon
	}
	return Reduce(s)
}

// Sub returns a − b mod P for canonical a, b.
func Sub(a, b uint64) uint64 {
	d, borrow := bits.Sub64(a, b, 0)
	// A borrow means the true value is d − 2^64 ≡ d − epsilon.
	if borrow != 0 {
		d -= epsilon
	}
	return d
}

// Neg returns −a mod P.
func Neg(a uint64) uint64 {
	if a == 0 {
		return 0
	}
	return P - a
}

// Mul returns a · b mod P for canonical a, b.
func Mul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return reduce128(hi, lo)
}

// reduce128 reduces hi·2^64 + lo using 2^64 ≡ 2^32 − 1 and 2^96 ≡ −1.
func reduce128(hi, lo uint64) uint64 {
	hiHi := hi >> 32
	hiLo := hi & epsilon
	// lo − hiHi (as 2^96 ≡ −1)
	t0, borrow := bits.Sub64(lo, hiHi, 0)
	if borrow != 0 {
		t0 -= epsilon
	}
	// + hiLo·(2^32 − 1)
	t1 := hiLo * epsilon // (2^32−1)^2 < 2^64: no overflow
	r, carry := bits.Add64(t0, t1, 0)
	if carry != 0 {
		r += epsilon
	}
	return Reduce(r)
}

// Square returns a² mod P.
func Square(a uint64) uint64 { return Mul(a, a) }

// Pow returns a^e mod P.
func Pow(a, e uint64) uint64 {
	r := uint64(1)
	for e != 0 {
		if e&1 != 0 {
			r = Mul(r, a)
		}
		a = Mul(a, a)
		e >>= 1
	}
	return r
}

// Inv returns a^(P−2), the multiplicative inverse of a; Inv(0) = 0, matching
// the reference (nox rejects zero before it gets here).
func Inv(a uint64) uint64 {
	if a == 0 {
		return 0
	}
	return Pow(a, P-2)
}

// Pow7 returns a^7, the S-box of hemera's full rounds.
func Pow7(a uint64) uint64 {
	a2 := Mul(a, a)
	a3 := Mul(a2, a)
	a4 := Mul(a2, a2)
	return Mul(a3, a4)
}
