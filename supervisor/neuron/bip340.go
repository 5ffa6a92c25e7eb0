package neuron

import (
	"crypto/sha256"
	"errors"
	"math/big"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// BIP-340 (Schnorr signatures for secp256k1) over 32-byte messages, built
// on decred's field and group arithmetic. Public keys are x-only (32
// bytes); signatures are 64 bytes, R.x ‖ s.

// SignatureSize is the length of a BIP-340 signature.
const SignatureSize = 64

var errBadSecret = errors.New("bip340: secret key out of range")

// taggedHash is SHA256(SHA256(tag) ‖ SHA256(tag) ‖ parts...).
func taggedHash(tag string, parts ...[]byte) [32]byte {
	th := sha256.Sum256([]byte(tag))
	h := sha256.New()
	h.Write(th[:])
	h.Write(th[:])
	for _, p := range parts {
		h.Write(p)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// bip340Sign signs msg with the secret scalar d0 and 32 bytes of
// auxiliary randomness. BIP-340 suggests verifying the signature before
// returning it, against faults; the store verifies every signature it is
// given before writing it, which is that check (TestBIP340Vectors and
// the sign/verify tests cover the arithmetic).
func bip340Sign(d0 *secp256k1.ModNScalar, pub PublicKey, msg [32]byte, aux [32]byte) ([SignatureSize]byte, error) {
	var sig [SignatureSize]byte
	if d0.IsZero() {
		return sig, errBadSecret
	}
	// P = d0·G is the public key: its prefix says whether y is odd.
	d := *d0
	if pub[0] == 3 {
		d.Negate()
	}
	px := pub.xOnly()
	db := d.Bytes()
	ah := taggedHash("BIP0340/aux", aux[:])
	var t [32]byte
	for i := range t {
		t[i] = db[i] ^ ah[i]
	}
	rand := taggedHash("BIP0340/nonce", t[:], px[:], msg[:])
	var k secp256k1.ModNScalar
	k.SetBytes(&rand)
	if k.IsZero() {
		return sig, errors.New("bip340: nonce is zero")
	}
	var r secp256k1.JacobianPoint
	baseTable().mul(&k, &r)
	if !affine(&r) {
		return sig, errors.New("bip340: R is the point at infinity")
	}
	if r.Y.IsOdd() {
		k.Negate()
	}
	rx := *r.X.Bytes()
	e := challenge(rx[:], px[:], msg)
	var s secp256k1.ModNScalar
	s.Mul2(&e, &d).Add(&k)
	sb := s.Bytes()
	copy(sig[:32], rx[:])
	copy(sig[32:], sb[:])
	return sig, nil
}

// fieldPrime is secp256k1's p.
var fieldPrime, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f", 16)

// affine makes p affine like ToAffine, with math/big's variable-time
// inversion (a binary GCD, about a fifth of the CPU of decred's
// exponentiation, which was a third of a signature); false for the
// point at infinity. Variable-time is what the tables are too (table.go).
func affine(p *secp256k1.JacobianPoint) bool {
	p.Z.Normalize()
	if p.Z.IsZero() {
		return false
	}
	var z, inv big.Int
	z.SetBytes(p.Z.Bytes()[:])
	if inv.ModInverse(&z, fieldPrime) == nil {
		return false
	}
	var b [32]byte
	inv.FillBytes(b[:])
	var zinv, z2, z3 secp256k1.FieldVal
	zinv.SetBytes(&b)
	z2.SquareVal(&zinv)
	z3.Mul2(&z2, &zinv)
	p.X.Mul(&z2).Normalize()
	p.Y.Mul(&z3).Normalize()
	p.Z.SetInt(1)
	return true
}

func challenge(rx, px []byte, msg [32]byte) secp256k1.ModNScalar {
	h := taggedHash("BIP0340/challenge", rx, px, msg[:])
	var e secp256k1.ModNScalar
	e.SetBytes(&h)
	return e
}

// liftX is the point with x coordinate x and an even y, if there is one.
func liftX(x *[32]byte) (secp256k1.JacobianPoint, bool) {
	var p secp256k1.JacobianPoint
	if overflow := p.X.SetBytes(x); overflow != 0 {
		return p, false
	}
	if !secp256k1.DecompressY(&p.X, false, &p.Y) {
		return p, false
	}
	p.Y.Normalize()
	p.Z.SetInt(1)
	return p, true
}

// bip340Verify checks sig over msg under the x-only public key px.
func bip340Verify(px [32]byte, msg [32]byte, sig []byte) bool {
	if len(sig) != SignatureSize {
		return false
	}
	table, ok := tableFor(px)
	if !ok {
		return false
	}
	var rx secp256k1.FieldVal
	if overflow := rx.SetByteSlice(sig[:32]); overflow {
		return false
	}
	var s secp256k1.ModNScalar
	if overflow := s.SetByteSlice(sig[32:]); overflow {
		return false
	}
	e := challenge(sig[:32], px[:], msg)
	// R = s·G − e·P
	var sg, ep, r secp256k1.JacobianPoint
	baseTable().mul(&s, &sg)
	e.Negate()
	table.mul(&e, &ep)
	secp256k1.AddNonConst(&sg, &ep, &r)
	if (r.X.IsZero() && r.Y.IsZero()) || r.Z.IsZero() || !affine(&r) {
		return false
	}
	if r.Y.IsOdd() {
		return false
	}
	r.X.Normalize()
	return r.X.Equals(&rx)
}
