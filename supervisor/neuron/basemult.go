package neuron

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"math/big"
	"math/bits"
	"sync"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// The base point multiplication of signing (the nonce's R = k·G) and of
// deriving a public key (d·G), in constant time: its running time and the
// memory it touches do not depend on the scalar. decred's (and so btcec's)
// ScalarBaseMultNonConst adds one table entry per byte of the scalar,
// indexed by that byte, and skips the additions of zero bytes: a process
// that shares the signer's cores and caches learns the nonce's zero
// bytes from its time (about half a microsecond each) and its bytes from
// the cache lines the lookups touch; signatures whose nonces are partly
// known are what lattice attacks recover a key from
// (docs/design/signing.md).
//
// Here the scalar is recoded into 43 signed odd digits of 6 bits
// (k = Σ dᵢ·64ⁱ, dᵢ ∈ {±1, ±3, …, ±63}), so no digit is zero and every
// window costs the same: one scan of all 32 table entries of its window,
// keeping the wanted one by masks, a masked negation of its y, and one
// complete addition (Renes, Costello and Batina, "Complete addition
// formulas for prime order elliptic curves", 2016, algorithm 8), which
// has no exceptional case (doubling, the point at infinity, a sum of
// zero) and so no branch. The field arithmetic is decred's, which is
// constant time (FieldVal's Mul, Add, Negate, Normalize); the one
// inversion at the end is of a randomly blinded value (blindedInverse).
// TestBaseMultMatchesDecred holds it to decred's result.

// Six bits a window: 43 additions and 88 KiB of table scanned per
// multiplication. 4 bits (64 additions) and 8 (256 KiB scanned) cost
// more; 5 to 7 were within the noise of each other
// (docs/design/signing.md).
const (
	ctWindowBits = 6
	ctWindows    = (256 + ctWindowBits - 1) / ctWindowBits // the recoded digits of a scalar below n
	ctEntries    = 1 << (ctWindowBits - 1)                 // the odd multiples 1, 3, …, 2^w − 1 of a window's base
)

// ctEntry is an affine point as 8 big-endian 64-bit words: x then y, each
// the 32 bytes of its normalized coordinate.
type ctEntry [8]uint64

// ctTable[i][j] is (2j+1)·64ⁱ·G. The table is public data: it is built
// once, on first use, with decred's variable-time arithmetic, a window's
// points made affine with one inversion (about 4 ms in all, against 25
// ms with an inversion per point and decred's own table unpacked).
var ctTable = sync.OnceValue(func() *[ctWindows][ctEntries]ctEntry {
	t := new([ctWindows][ctEntries]ctEntry)
	// G from the curve's parameters: ScalarBaseMultNonConst would first
	// unpack decred's own table (about 15 ms).
	var gx, gy [32]byte
	secp256k1.Params().Gx.FillBytes(gx[:])
	secp256k1.Params().Gy.FillBytes(gy[:])
	var base secp256k1.JacobianPoint
	base.X.SetBytes(&gx)
	base.Y.SetBytes(&gy)
	base.Z.SetInt(1)
	var row [ctEntries]secp256k1.JacobianPoint
	for i := range t {
		var twice secp256k1.JacobianPoint
		secp256k1.DoubleNonConst(&base, &twice)
		row[0].Set(&base)
		for j := 1; j < ctEntries; j++ {
			secp256k1.AddNonConst(&row[j-1], &twice, &row[j])
		}
		toAffine(row[:])
		for j := range row {
			t[i][j] = entryOf(&row[j].X, &row[j].Y)
		}
		for range ctWindowBits {
			secp256k1.DoubleNonConst(&base, &base)
		}
	}
	return t
})

// toAffine makes points (none the point at infinity) affine with one
// inversion: the running products of their Z are inverted once and
// unwound (Montgomery's trick).
func toAffine(ps []secp256k1.JacobianPoint) {
	prefix := make([]secp256k1.FieldVal, len(ps))
	var acc secp256k1.FieldVal
	acc.SetInt(1)
	for i := range ps {
		acc.Mul(&ps[i].Z).Normalize()
		prefix[i].Set(&acc)
	}
	inv := *acc.Inverse().Normalize() // 1/(Z0·…·Zn)
	for i := len(ps) - 1; i >= 0; i-- {
		var zinv secp256k1.FieldVal
		if i > 0 {
			zinv.Mul2(&inv, &prefix[i-1]).Normalize() // 1/Zi
		} else {
			zinv.Set(&inv)
		}
		inv.Mul(&ps[i].Z).Normalize() // 1/(Z0·…·Zi−1)
		var z2, z3 secp256k1.FieldVal
		z2.SquareVal(&zinv).Normalize()
		z3.Mul2(&z2, &zinv).Normalize()
		ps[i].X.Mul(&z2).Normalize()
		ps[i].Y.Mul(&z3).Normalize()
		ps[i].Z.SetInt(1)
	}
}

func entryOf(x, y *secp256k1.FieldVal) ctEntry {
	var e ctEntry
	xb, yb := x.Bytes(), y.Bytes()
	for w := range 4 {
		e[w] = binary.BigEndian.Uint64(xb[8*w:])
		e[4+w] = binary.BigEndian.Uint64(yb[8*w:])
	}
	return e
}

// fieldPrime is p as 4 big-endian 64-bit words.
var fieldPrime = [4]uint64{0xffffffffffffffff, 0xffffffffffffffff, 0xffffffffffffffff, 0xfffffffefffffc2f}

// negateMasked sets the y of e (words 4..7) to p − y when mask is all
// ones and leaves it when mask is zero. y is never zero (secp256k1 has
// no point of order 2), so p − y is reduced.
func negateMasked(e *ctEntry, mask uint64) {
	var neg [4]uint64
	var borrow uint64
	for w := 3; w >= 0; w-- {
		neg[w], borrow = bits.Sub64(fieldPrime[w], e[4+w], borrow)
	}
	for w := range 4 {
		e[4+w] ^= (e[4+w] ^ neg[w]) & mask
	}
}

// recode writes the signed odd digits of an odd scalar k (big-endian
// bytes, k < n) in windows of w bits: digit i as its table index
// (|dᵢ|−1)/2 and a mask that is all ones when dᵢ < 0. Each step takes
// dᵢ = (k mod 2^(w+1)) − 2^w, which is odd because k is, and leaves
// (k − dᵢ)/2^w, which is odd again and at most k/2^w + 1; after
// ctWindows − 1 steps what is left is odd and below 2^w, the last digit.
func recode(kb *[32]byte, index *[ctWindows]uint64, negative *[ctWindows]uint64) {
	var k [4]uint64 // little-endian words
	for w := range 4 {
		k[w] = binary.BigEndian.Uint64(kb[8*(3-w):])
	}
	const (
		w    = ctWindowBits
		half = 1 << w
	)
	for i := range ctWindows - 1 {
		v := k[0] & (2*half - 1)
		positive := v >> w // bit w set: v > 2^w, dᵢ = v − 2^w > 0
		low := v & (half - 1)
		// |dᵢ| is low when positive, 2^w − low when not.
		abs := low ^ ((low ^ (half - low)) & (positive - 1))
		index[i] = (abs - 1) >> 1
		negative[i] = positive - 1
		// k − dᵢ clears the low w+1 bits and sets bit w; then k >>= w.
		k[0] = k[0]&^(2*half-1) | half
		k[0] = k[0]>>w | k[1]<<(64-w)
		k[1] = k[1]>>w | k[2]<<(64-w)
		k[2] = k[2]>>w | k[3]<<(64-w)
		k[3] >>= w
	}
	index[ctWindows-1] = (k[0] - 1) >> 1
	negative[ctWindows-1] = 0
}

// projective is a point in homogeneous coordinates (X:Y:Z) = (X/Z, Y/Z);
// the point at infinity is (0:1:0).
type projective struct{ x, y, z secp256k1.FieldVal }

// addAffine sets p = p + (x2, y2) with the complete mixed addition for
// y² = x³ + b (RCB algorithm 8, b3 = 3b = 21): correct for every p,
// the point at infinity and p = ±(x2, y2) included. Every input and the
// result are normalized (magnitude 1); the comments give magnitudes.
func (p *projective) addAffine(x2, y2 *secp256k1.FieldVal) {
	var t0, t1, t2, t3, t4, x3, y3, z3 secp256k1.FieldVal
	t0.Mul2(&p.x, x2)       // 1
	t1.Mul2(&p.y, y2)       // 1
	t3.Add2(x2, y2)         // 2
	t4.Add2(&p.x, &p.y)     // 2
	t3.Mul(&t4)             // 1
	t4.Add2(&t0, &t1)       // 2
	t3.Add(t4.Negate(2))    // t3 − t4: 1 + 3 = 4
	t4.Mul2(y2, &p.z)       // 1
	t4.Add(&p.y)            // 2
	y3.Mul2(x2, &p.z)       // 1
	y3.Add(&p.x)            // 2
	x3.Add2(&t0, &t0)       // 2
	t0.Add2(&x3, &t0)       // 3
	t2.Set(&p.z).MulInt(21) // 21
	t2.Normalize()          // 1
	z3.Add2(&t1, &t2)       // 2
	t1.Add(t2.Negate(1))    // t1 − t2: 1 + 2 = 3
	y3.Normalize().MulInt(21).Normalize()
	x3.Mul2(&t4, &y3)     // 1
	t2.Mul2(&t3, &t1)     // 1
	x3.Negate(1).Add(&t2) // t2 − x3: 2 + 1 = 3
	y3.Mul(&t0)           // 1
	t1.Mul(&z3)           // 1
	y3.Add(&t1)           // 2
	t0.Mul(&t3)           // 1
	z3.Mul(&t4)           // 1
	z3.Add(&t0)           // 2
	p.x.Set(x3.Normalize())
	p.y.Set(y3.Normalize())
	p.z.Set(z3.Normalize())
}

// ctBaseMult returns the affine coordinates (normalized) of k·G for a
// nonzero k, in constant time.
func ctBaseMult(k *secp256k1.ModNScalar) (x, y secp256k1.FieldVal) {
	// The recoding needs an odd scalar: for an even k, n − k (odd, as n
	// is) is used and the result negated at the end. Both are computed
	// and one kept by a mask.
	kb := k.Bytes()
	var neg secp256k1.ModNScalar
	neg.NegateVal(k)
	nb := neg.Bytes()
	even := subtle.ConstantTimeByteEq(kb[31]&1, 0)
	subtle.ConstantTimeCopy(even, kb[:], nb[:])
	clear(nb[:])
	neg.Zero()

	var index, negative [ctWindows]uint64
	recode(&kb, &index, &negative)
	clear(kb[:])

	table := ctTable()
	acc := projective{}
	acc.y.SetInt(1) // the point at infinity
	var e ctEntry
	var ex, ey secp256k1.FieldVal
	var buf [32]byte
	for i := range ctWindows {
		e = ctEntry{}
		for j := range ctEntries {
			mask := -uint64(subtle.ConstantTimeEq(int32(j), int32(index[i])))
			for w := range e {
				e[w] |= table[i][j][w] & mask
			}
		}
		negateMasked(&e, negative[i])
		for w := range 4 {
			binary.BigEndian.PutUint64(buf[8*w:], e[w])
		}
		ex.SetBytes(&buf)
		for w := range 4 {
			binary.BigEndian.PutUint64(buf[8*w:], e[4+w])
		}
		ey.SetBytes(&buf)
		acc.addAffine(&ex, &ey)
	}
	clear(index[:])
	clear(negative[:])

	// k·G is never the point at infinity for 0 < k < n, so Z ≠ 0.
	zinv := blindedInverse(&acc.z)
	x.Mul2(&acc.x, &zinv).Normalize()
	y.Mul2(&acc.y, &zinv).Normalize()
	// Undo the negation of an even k: y → p − y, by mask.
	e = entryOf(&x, &y)
	negateMasked(&e, -uint64(even))
	for w := range 4 {
		binary.BigEndian.PutUint64(buf[8*w:], e[4+w])
	}
	y.SetBytes(&buf)
	return x, y
}

// blindedInverse is 1/z for a nonzero normalized z. decred's Inverse is
// constant time but costs about 270 multiplications, a fifth of a
// signature; math/big's binary GCD costs a fifth of that but its time
// depends on its input. So z is multiplied by a random nonzero r first:
// z·r is uniform and independent of z (of the nonce), its inversion
// shows nothing about z, and 1/z = r/(z·r).
func blindedInverse(z *secp256k1.FieldVal) secp256k1.FieldVal {
	var inv secp256k1.FieldVal
	var rb [32]byte
	if _, err := rand.Read(rb[:]); err != nil {
		// crypto/rand does not fail on Linux; the constant-time
		// inversion needs no randomness.
		return *inv.Set(z).Inverse().Normalize()
	}
	var r, u secp256k1.FieldVal
	r.SetBytes(&rb)
	if r.Normalize().IsZero() {
		return *inv.Set(z).Inverse().Normalize()
	}
	u.Mul2(z, &r).Normalize()
	ub := u.Bytes()
	uinv := new(big.Int).ModInverse(new(big.Int).SetBytes(ub[:]), fieldPrimeBig)
	uinv.FillBytes(rb[:])
	inv.SetBytes(&rb)
	clear(rb[:])
	inv.Mul(&r).Normalize()
	return inv
}

// fieldPrimeBig is p for math/big.
var fieldPrimeBig = new(big.Int).SetBytes([]byte{
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xfc, 0x2f,
})
