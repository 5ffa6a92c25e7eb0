package neuron

import (
	"crypto/sha256"
	"math/big"
)

// A transcription of BIP-340's specification in math/big, for the tests
// only: affine points, textbook addition and double-and-add, nothing
// shared with the signer (not decred, not btcec, not taggedHash). It is
// slow (a few milliseconds a signature) and obviously the specification,
// which is what an independent check of the two libraries needs; it
// passes all 19 reference vectors itself (TestBIP340Vectors), including
// the messages that are not 32 bytes, which btcec does not take.

var (
	refP, _  = new(big.Int).SetString("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f", 16)
	refN, _  = new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)
	refGx, _ = new(big.Int).SetString("79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798", 16)
	refGy, _ = new(big.Int).SetString("483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8", 16)
)

// refPoint is an affine point; nil is the point at infinity.
type refPoint struct{ x, y *big.Int }

func refMod(v *big.Int, m *big.Int) *big.Int { return new(big.Int).Mod(v, m) }

func refAdd(a, b *refPoint) *refPoint {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	if a.x.Cmp(b.x) == 0 && a.y.Cmp(b.y) != 0 {
		return nil
	}
	var lam *big.Int
	if a.x.Cmp(b.x) == 0 { // a == b
		num := new(big.Int).Mul(big.NewInt(3), new(big.Int).Mul(a.x, a.x))
		den := new(big.Int).ModInverse(new(big.Int).Mul(big.NewInt(2), a.y), refP)
		lam = refMod(num.Mul(num, den), refP)
	} else {
		num := new(big.Int).Sub(b.y, a.y)
		den := new(big.Int).ModInverse(refMod(new(big.Int).Sub(b.x, a.x), refP), refP)
		lam = refMod(num.Mul(num, den), refP)
	}
	x := new(big.Int).Mul(lam, lam)
	x = refMod(x.Sub(x, a.x).Sub(x, b.x), refP)
	y := new(big.Int).Sub(a.x, x)
	y = refMod(y.Mul(y, lam).Sub(y, a.y), refP)
	return &refPoint{x, y}
}

func refMul(p *refPoint, k *big.Int) *refPoint {
	var r *refPoint
	for i := k.BitLen() - 1; i >= 0; i-- {
		r = refAdd(r, r)
		if k.Bit(i) == 1 {
			r = refAdd(r, p)
		}
	}
	return r
}

func refG() *refPoint { return &refPoint{refGx, refGy} }

func refBytes(v *big.Int) []byte { return v.FillBytes(make([]byte, 32)) }

func refTagged(tag string, msg ...[]byte) []byte {
	t := sha256.Sum256([]byte(tag))
	h := sha256.New()
	h.Write(t[:])
	h.Write(t[:])
	for _, m := range msg {
		h.Write(m)
	}
	return h.Sum(nil)
}

func refInt(b []byte) *big.Int { return new(big.Int).SetBytes(b) }

func refLiftX(xb []byte) *refPoint {
	x := refInt(xb)
	if x.Cmp(refP) >= 0 {
		return nil
	}
	c := new(big.Int).Exp(x, big.NewInt(3), refP)
	c = refMod(c.Add(c, big.NewInt(7)), refP)
	e := new(big.Int).Add(refP, big.NewInt(1))
	y := new(big.Int).Exp(c, e.Rsh(e, 2), refP)
	if new(big.Int).Exp(y, big.NewInt(2), refP).Cmp(c) != 0 {
		return nil
	}
	if y.Bit(0) == 1 {
		y = new(big.Int).Sub(refP, y)
	}
	return &refPoint{x, y}
}

func refSign(sk, msg, aux []byte) []byte {
	d0 := refInt(sk)
	if d0.Sign() == 0 || d0.Cmp(refN) >= 0 {
		return nil
	}
	p := refMul(refG(), d0)
	d := d0
	if p.y.Bit(0) == 1 {
		d = new(big.Int).Sub(refN, d0)
	}
	t := refBytes(d)
	for i, b := range refTagged("BIP0340/aux", aux) {
		t[i] ^= b
	}
	k0 := refMod(refInt(refTagged("BIP0340/nonce", t, refBytes(p.x), msg)), refN)
	if k0.Sign() == 0 {
		return nil
	}
	r := refMul(refG(), k0)
	k := k0
	if r.y.Bit(0) == 1 {
		k = new(big.Int).Sub(refN, k0)
	}
	e := refMod(refInt(refTagged("BIP0340/challenge", refBytes(r.x), refBytes(p.x), msg)), refN)
	s := refMod(new(big.Int).Add(k, new(big.Int).Mul(e, d)), refN)
	return append(refBytes(r.x), refBytes(s)...)
}

func refVerify(pk, msg, sig []byte) bool {
	if len(pk) != 32 || len(sig) != 64 {
		return false
	}
	p := refLiftX(pk)
	if p == nil {
		return false
	}
	r, s := refInt(sig[:32]), refInt(sig[32:])
	if r.Cmp(refP) >= 0 || s.Cmp(refN) >= 0 {
		return false
	}
	e := refMod(refInt(refTagged("BIP0340/challenge", sig[:32], pk, msg)), refN)
	rp := refAdd(refMul(refG(), s), refMul(p, new(big.Int).Sub(refN, e)))
	return rp != nil && rp.y.Bit(0) == 0 && rp.x.Cmp(r) == 0
}
