package hemera

import "github.com/cyberia-to/cyber-supervisor/noxrunner/field"

// Permute2 applies the permutation to two independent states, bit for bit
// as Permute(a); Permute(b).
//
// One permutation is bound by latency: a full round's S-box is three
// dependent products deep, and each partial round waits for the previous
// one's scalar products and the horizontal sum of its lanes. Two states
// have no dependency on each other, so the vector code (simd2_amd64.s)
// runs them side by side and the core overlaps one's chain with the
// other's; and the two partial-round denominators share one field
// inversion (Montgomery's trick: 1/(Za·Zb), then two products). Where the
// vector code does not run, the two states take the portable path one
// after the other, sharing only the inversion. docs/hashing.md has the
// figures.
//
// A caller with many independent hashes (the certificate verifier's
// digests) uses the digest functions built on it: AtomDigest2,
// PairDigest2 and HashData2.
func Permute2(a, b *State) { permute2(a, b, &roundConstants) }

// permute2 is Permute2 with the constant table as a parameter, as permute.
func permute2(a, b *State, rc *[144]uint64) {
	x, y := *a, *b
	first, last := (*[64]uint64)(rc[0:64]), (*[64]uint64)(rc[64:128])
	partial := (*[16]uint64)(rc[128:])
	var zx, zy uint64
	if haveSIMD {
		external2SIMD(&x, &y)
		fullRounds2SIMD(&x, &y, first)
		zx, zy = projectiveRounds2SIMD(&x, &y, partial)
	} else {
		external(&x)
		external(&y)
		fullRoundsGo(&x, first)
		fullRoundsGo(&y, first)
		zx, zy = projectiveRounds(&x, partial), projectiveRounds(&y, partial)
	}
	// Neither denominator is 0 (each is a product of non-zero factors),
	// so neither is their product.
	inv := field.Inv(canon(mul(zx, zy)))
	kx, ky := canon(mul(inv, zy)), canon(mul(inv, zx))
	if haveSIMD {
		scaledFullRounds2SIMD(&x, &y, last, kx, ky)
	} else {
		for i := range x {
			x[i], y[i] = mul(x[i], kx), mul(y[i], ky)
		}
		fullRoundsGo(&x, last)
		fullRoundsGo(&y, last)
	}
	for i := range x {
		a[i], b[i] = canon(x[i]), canon(y[i])
	}
}
