package neuron

import (
	"encoding/csv"
	"encoding/hex"
	"os"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

func TestBIP340Vectors(t *testing.T) {
	f, err := os.Open("testdata/bip340-vectors.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 16 {
		t.Fatalf("%d rows, want a header and 15 vectors", len(rows))
	}
	for _, r := range rows[1:] {
		idx, sk, pk, aux, msg, sig, want := r[0], r[1], r[2], r[3], r[4], r[5], r[6] == "TRUE"
		var px, m [32]byte
		copy(px[:], unhex(t, pk))
		copy(m[:], unhex(t, msg))
		if got := bip340Verify(px, m, unhex(t, sig)); got != want {
			t.Errorf("vector %s (%s): verify = %v, want %v", idx, r[7], got, want)
		}
		if sk == "" {
			continue
		}
		k, err := keyFromBytes(unhex(t, sk))
		if err != nil {
			t.Fatalf("vector %s: %v", idx, err)
		}
		if x := k.PublicKey().xOnly(); x != px {
			t.Errorf("vector %s: public key %x, want %s", idx, x, pk)
		}
		var a [32]byte
		copy(a[:], unhex(t, aux))
		got, err := bip340Sign(k.d, k.pub, m, a)
		if err != nil {
			t.Fatalf("vector %s: sign: %v", idx, err)
		}
		if hex.EncodeToString(got[:]) != lower(sig) {
			t.Errorf("vector %s: signature %x, want %s", idx, got, sig)
		}
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'F' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func TestSignVerifyStatement(t *testing.T) {
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	st := NewStatement("neuron/test/1").Text("op").U64(7).Bytes([]byte{1, 2})
	sig, err := k.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	pub := k.PublicKey()
	if !pub.Verify(st, sig) {
		t.Fatal("own signature does not verify")
	}
	for name, other := range map[string]*Statement{
		"another kind":  NewStatement("neuron/test/2").Text("op").U64(7).Bytes([]byte{1, 2}),
		"another value": NewStatement("neuron/test/1").Text("op").U64(8).Bytes([]byte{1, 2}),
		"shifted field": NewStatement("neuron/test/1").Text("op\x00\x00\x00\x00\x00\x00\x00").Bytes([]byte{1, 2}),
		"text as bytes": NewStatement("neuron/test/1").Bytes([]byte("op")).U64(7).Bytes([]byte{1, 2}),
	} {
		if pub.Verify(other, sig) {
			t.Errorf("signature verifies over %s", name)
		}
	}
	bad := append([]byte(nil), sig...)
	bad[40] ^= 1
	if pub.Verify(st, bad) {
		t.Error("altered signature verifies")
	}
	k2, _ := GenerateKey()
	if k2.PublicKey().Verify(st, sig) {
		t.Error("signature verifies under another key")
	}
	if pub.Verify(st, sig[:63]) {
		t.Error("short signature verifies")
	}
}

func TestIDIsHemeraOfCompressedKey(t *testing.T) {
	// Vector 1's secret: its compressed key is 02 ‖ x (even y).
	k, err := keyFromBytes(unhex(t, "B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF"))
	if err != nil {
		t.Fatal(err)
	}
	pub := k.PublicKey()
	if pub[0] != 2 && pub[0] != 3 {
		t.Fatalf("not a compressed key: %x", pub)
	}
	if k.ID() != pub.ID() || k.ID().IsZero() {
		t.Fatal("id mismatch")
	}
	var round PublicKey
	if err := round.UnmarshalText([]byte(pub.String())); err != nil || round != pub {
		t.Fatalf("public key text round trip: %v", err)
	}
	if err := round.UnmarshalText([]byte("02" + "00")); err == nil {
		t.Error("short public key accepted")
	}
}

func TestKeyRange(t *testing.T) {
	for _, s := range []string{
		"0000000000000000000000000000000000000000000000000000000000000000",
		"FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141", // n
	} {
		if _, err := keyFromBytes(unhex(t, s)); err == nil {
			t.Errorf("secret %s accepted", s)
		}
	}
}

// TestAffineIsToAffine: the big.Int inversion gives decred's affine
// coordinates for random points, and refuses the point at infinity.
func TestAffineIsToAffine(t *testing.T) {
	for i := range 200 {
		k, err := GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		var p secp256k1.JacobianPoint
		baseTable().mul(k.d, &p)
		q := p
		q.ToAffine()
		if !affine(&p) || !p.X.Equals(&q.X) || !p.Y.Equals(&q.Y) || !p.Z.IsOne() {
			t.Fatalf("point %d: affine differs from ToAffine", i)
		}
	}
	var inf secp256k1.JacobianPoint
	if affine(&inf) {
		t.Fatal("the point at infinity was made affine")
	}
}
