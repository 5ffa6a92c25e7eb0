package neuron

import (
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

func BenchmarkSign(b *testing.B) {
	k, _ := GenerateKey()
	st := NewStatement("neuron/bench/1").Text("x").U64(1)
	k.Sign(st) // the base point's table is made once per process
	for b.Loop() {
		if _, err := k.Sign(st); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	k, _ := GenerateKey()
	st := NewStatement("neuron/bench/1").Text("x").U64(1)
	sig, _ := k.Sign(st)
	pub := k.PublicKey()
	pub.Verify(st, sig) // the key's table is made once per process
	for b.Loop() {
		if !pub.Verify(st, sig) {
			b.Fatal("verify")
		}
	}
}

func BenchmarkBaseMult(b *testing.B) {
	k, _ := GenerateKey()
	var r secp256k1.JacobianPoint
	for b.Loop() {
		secp256k1.ScalarBaseMultNonConst(k.d, &r)
	}
}

func BenchmarkTableMult(b *testing.B) {
	k, _ := GenerateKey()
	x := k.PublicKey().xOnly()
	t, _ := tableFor(x)
	var r secp256k1.JacobianPoint
	for b.Loop() {
		t.mul(k.d, &r)
	}
}
