package neuron

import (
	"math/big"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

func decredBaseMult(k *secp256k1.ModNScalar) (x, y secp256k1.FieldVal) {
	var r secp256k1.JacobianPoint
	secp256k1.ScalarBaseMultNonConst(k, &r)
	r.ToAffine()
	return r.X, r.Y
}

func scalarOf(t *testing.T, v *big.Int) *secp256k1.ModNScalar {
	t.Helper()
	var b [32]byte
	v.FillBytes(b[:])
	var k secp256k1.ModNScalar
	if overflow := k.SetBytes(&b); overflow != 0 {
		t.Fatalf("scalar %x overflows", b)
	}
	return &k
}

// TestBaseMultMatchesDecred: the constant-time k·G is decred's for the
// scalars at the edges of the recoding (1, 2, small, n−1, n−2, every
// power of two, scalars of many zero bytes or all ones, even and odd)
// and for random ones.
func TestBaseMultMatchesDecred(t *testing.T) {
	var ks []*big.Int
	for _, v := range []int64{1, 2, 3, 15, 16, 17, 31, 32, 33, 255, 256, 65535} {
		ks = append(ks, big.NewInt(v))
	}
	for _, d := range []int64{1, 2, 3, 16, 17} {
		ks = append(ks, new(big.Int).Sub(refN, big.NewInt(d)))
	}
	for i := range 256 {
		ks = append(ks, new(big.Int).Lsh(big.NewInt(1), uint(i)))
	}
	half := new(big.Int).Rsh(refN, 1)
	ks = append(ks, half, new(big.Int).Add(half, big.NewInt(1)))
	ones, _ := new(big.Int).SetString("7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", 16)
	zeros, _ := new(big.Int).SetString("1000000000000000000000000000000000ff000000000000000000000000ff01", 16)
	ks = append(ks, ones, zeros)
	for range 300 {
		b := random32(t)
		ks = append(ks, new(big.Int).Mod(new(big.Int).SetBytes(b[:]), refN))
	}
	for _, v := range ks {
		if v.Sign() == 0 {
			continue
		}
		k := scalarOf(t, v)
		gx, gy := ctBaseMult(k)
		wx, wy := decredBaseMult(k)
		if !gx.Equals(&wx) || !gy.Equals(&wy) {
			t.Fatalf("k = %x: (%x, %x), decred (%x, %x)", v, gx.Bytes(), gy.Bytes(), wx.Bytes(), wy.Bytes())
		}
	}
}

// TestCompleteAddition: the mixed addition needs no special case: the
// point at infinity plus P is P, P plus P is 2P, −P plus P is the point
// at infinity (Z = 0), and P plus Q is decred's sum.
func TestCompleteAddition(t *testing.T) {
	point := func(v int64) (x, y secp256k1.FieldVal) { return decredBaseMult(scalarOf(t, big.NewInt(v))) }
	affineOf := func(p *projective) (x, y secp256k1.FieldVal) {
		var zinv secp256k1.FieldVal
		zinv.Set(&p.z).Inverse()
		x.Mul2(&p.x, &zinv).Normalize()
		y.Mul2(&p.y, &zinv).Normalize()
		return x, y
	}
	px, py := point(5)
	p := projective{}
	p.y.SetInt(1)
	p.addAffine(&px, &py)
	if x, y := affineOf(&p); !x.Equals(&px) || !y.Equals(&py) {
		t.Fatal("∞ + P is not P")
	}
	p.addAffine(&px, &py)
	wx, wy := point(10)
	if x, y := affineOf(&p); !x.Equals(&wx) || !y.Equals(&wy) {
		t.Fatal("P + P is not 2P")
	}
	qx, qy := point(7)
	p.addAffine(&qx, &qy)
	wx, wy = point(17)
	if x, y := affineOf(&p); !x.Equals(&wx) || !y.Equals(&wy) {
		t.Fatal("10G + 7G is not 17G")
	}
	var ny secp256k1.FieldVal
	ny.NegateVal(&wy, 1).Normalize()
	p.addAffine(&wx, &ny)
	if !p.z.IsZero() {
		t.Fatal("17G − 17G is not the point at infinity")
	}
	p.addAffine(&qx, &qy)
	if x, y := affineOf(&p); !x.Equals(&qx) || !y.Equals(&qy) {
		t.Fatal("(17G − 17G) + 7G is not 7G")
	}
}

// TestBlindedInverse: z · blindedInverse(z) = 1 for random z and for 1
// and p − 1.
func TestBlindedInverse(t *testing.T) {
	var zs []secp256k1.FieldVal
	var one, minusOne secp256k1.FieldVal
	one.SetInt(1)
	minusOne.NegateVal(&one, 1).Normalize()
	zs = append(zs, one, minusOne)
	for range 200 {
		b := random32(t)
		var z secp256k1.FieldVal
		z.SetBytes(&b)
		if !z.Normalize().IsZero() {
			zs = append(zs, z)
		}
	}
	for _, z := range zs {
		inv := blindedInverse(&z)
		var prod secp256k1.FieldVal
		if !prod.Mul2(&z, &inv).Normalize().IsOne() {
			t.Fatalf("z = %x: z · 1/z = %x", z.Bytes(), prod.Bytes())
		}
	}
}
