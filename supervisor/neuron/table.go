package neuron

import (
	"sync"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// pointTable holds the multiples j·256^i·P (j = 1..255, i = 0..31) of one
// point in affine form, so that k·P is at most 32 additions. The
// neuron's signatures are always checked against one P (its key) and
// made with one base point G: with a table each, a verification costs
// about a third of decred's generic arbitrary-point multiplication plus
// its base-point one, and a signature half. The tables are variable-time
// like decred's NonConst functions: this process is the only one that
// signs, and nothing remote times it.
type pointTable [32][256]secp256k1.JacobianPoint

func newPointTable(p *secp256k1.JacobianPoint) *pointTable {
	t := new(pointTable)
	var base secp256k1.JacobianPoint
	base.Set(p)
	base.ToAffine()
	for i := range t {
		// Each row is built in Jacobian form with the affine base (the
		// additions' fast path), then made affine with one inversion.
		t[i][1].Set(&base)
		for j := 2; j < 256; j++ {
			secp256k1.AddNonConst(&t[i][j-1], &base, &t[i][j])
		}
		toAffine(t[i][1:])
		for range 8 {
			secp256k1.DoubleNonConst(&base, &base)
		}
		base.ToAffine()
	}
	return t
}

// toAffine makes every point of ps affine with one field inversion
// (Montgomery's trick): the products of the Z coordinates are inverted
// once and unwound.
func toAffine(ps []secp256k1.JacobianPoint) {
	prefix := make([]secp256k1.FieldVal, len(ps))
	var acc secp256k1.FieldVal
	acc.SetInt(1)
	for i := range ps {
		acc.Mul(&ps[i].Z).Normalize()
		prefix[i].Set(&acc)
	}
	var inv secp256k1.FieldVal
	inv.Set(&acc).Inverse().Normalize()
	for i := len(ps) - 1; i >= 0; i-- {
		var zinv secp256k1.FieldVal
		if i > 0 {
			zinv.Mul2(&inv, &prefix[i-1]).Normalize()
		} else {
			zinv.Set(&inv)
		}
		inv.Mul(&ps[i].Z).Normalize()
		var z2, z3 secp256k1.FieldVal
		z2.SquareVal(&zinv).Normalize()
		z3.Mul2(&z2, &zinv).Normalize()
		ps[i].X.Mul(&z2).Normalize()
		ps[i].Y.Mul(&z3).Normalize()
		ps[i].Z.SetInt(1)
	}
}

// mul sets r = k·P.
func (t *pointTable) mul(k *secp256k1.ModNScalar, r *secp256k1.JacobianPoint) {
	b := k.Bytes()
	var acc secp256k1.JacobianPoint // the point at infinity
	for i := range 32 {
		if v := b[31-i]; v != 0 {
			secp256k1.AddNonConst(&acc, &t[i][v], &acc)
		}
	}
	r.Set(&acc)
}

var (
	tablesMu sync.Mutex
	// tables are those of the public keys verified in this process (in
	// practice the home's one neuron key).
	tables = map[[32]byte]*pointTable{}
	// baseTable is G's, made on first use.
	baseTable = sync.OnceValue(func() *pointTable {
		var one secp256k1.ModNScalar
		one.SetInt(1)
		var g secp256k1.JacobianPoint
		secp256k1.ScalarBaseMultNonConst(&one, &g)
		g.ToAffine()
		return newPointTable(&g)
	})
)

const maxTables = 4

// tableFor is the table of the point with x coordinate px and even y,
// or false when px is none (it is lifted once per key too).
func tableFor(px [32]byte) (*pointTable, bool) {
	tablesMu.Lock()
	defer tablesMu.Unlock()
	if t := tables[px]; t != nil {
		return t, true
	}
	p, ok := liftX(&px)
	if !ok {
		return nil, false
	}
	if len(tables) >= maxTables {
		clear(tables)
	}
	t := newPointTable(&p)
	tables[px] = t
	return t, true
}
