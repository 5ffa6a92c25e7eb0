package neuron

import (
	"bytes"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

// TestBIP340Vectors runs all 19 reference vectors: the signer must make
// each listed signature from its secret, auxiliary randomness and message
// (of any length: vectors 15–18 sign 0, 1, 17 and 100 bytes); btcec, the
// verifier, must give each verdict of a 32-byte message; the reference
// (reference_test.go) must give every verdict and make every signature.
// btcec v2.3.5 implements BIP-340 as it was before its 2022 amendment for
// messages of other lengths and refuses them: the neuron only ever signs
// and verifies 32-byte digests.
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
	if len(rows) != 20 {
		t.Fatalf("%d rows, want a header and 19 vectors", len(rows))
	}
	for _, r := range rows[1:] {
		idx, sk, pk, aux, want := r[0], r[1], unhex(t, r[2]), r[3], r[6] == "TRUE"
		msg, sig := unhex(t, r[4]), unhex(t, r[5])
		if got := refVerify(pk, msg, sig); got != want {
			t.Errorf("vector %s (%s): reference verify = %v, want %v", idx, r[7], got, want)
		}
		if len(msg) == 32 {
			var px, m [32]byte
			copy(px[:], pk)
			copy(m[:], msg)
			if got := bip340Verify(px, m, sig); got != want {
				t.Errorf("vector %s (%s): verify = %v, want %v", idx, r[7], got, want)
			}
		} else if pub, err := schnorr.ParsePubKey(pk); err == nil {
			if s, err := schnorr.ParseSignature(sig); err == nil && s.Verify(msg, pub) {
				t.Errorf("vector %s: btcec verified a %d-byte message; the neuron's verifier can take them now", idx, len(msg))
			}
		}
		if sk == "" {
			continue
		}
		secret := unhex(t, sk)
		if got := refSign(secret, msg, unhex(t, aux)); !bytes.Equal(got, sig) {
			t.Errorf("vector %s: reference signature %x, want %x", idx, got, sig)
		}
		k, err := keyFromBytes(secret)
		if err != nil {
			t.Fatalf("vector %s: %v", idx, err)
		}
		if x := k.PublicKey().xOnly(); !bytes.Equal(x[:], pk) {
			t.Errorf("vector %s: public key %x, want %x", idx, x, pk)
		}
		got, err := bip340Sign(k.d, k.pub.xOnly(), k.pub.odd(), msg, [32]byte(unhex(t, aux)))
		if err != nil {
			t.Fatalf("vector %s: sign: %v", idx, err)
		}
		if !bytes.Equal(got[:], sig) {
			t.Errorf("vector %s: signature %x, want %x", idx, got, sig)
		}
	}
}

// crossChecks is how many random keys TestSignMatchesBtcec signs with;
// NEURON_CROSSCHECKS raises it for a long run (scripts/bench-signing.sh).
func crossChecks(t *testing.T, short int) int {
	if s := os.Getenv("NEURON_CROSSCHECKS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("NEURON_CROSSCHECKS=%q", s)
		}
		return n
	}
	return short
}

func random32(t testing.TB) (b [32]byte) {
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSignMatchesBtcec: for random keys (of both parities), messages and
// auxiliary randomness, the signer makes exactly btcec's signature
// (schnorr.Sign with CustomNonce), btcec's verifier accepts it and
// refuses it with any one bit flipped, and every fifth case the
// reference signs the same bytes and agrees on both verdicts.
func TestSignMatchesBtcec(t *testing.T) {
	n := crossChecks(t, 200)
	odd := 0
	for i := range n {
		secret := random32(t)
		k, err := keyFromBytes(secret[:])
		if err != nil {
			continue // out of range: about 2^-128
		}
		if k.pub.odd() {
			odd++
		}
		msg, aux := random32(t), random32(t)
		ours, err := bip340Sign(k.d, k.pub.xOnly(), k.pub.odd(), msg[:], aux)
		if err != nil {
			t.Fatal(err)
		}
		priv, pub := btcec.PrivKeyFromBytes(secret[:])
		if !bytes.Equal(pub.SerializeCompressed(), k.pub[:]) {
			t.Fatalf("case %d: public key %x, btcec %x", i, k.pub, pub.SerializeCompressed())
		}
		theirs, err := schnorr.Sign(priv, msg[:], schnorr.CustomNonce(aux), schnorr.FastSign())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ours[:], theirs.Serialize()) {
			t.Fatalf("case %d: signature %x, btcec %x", i, ours, theirs.Serialize())
		}
		px := k.pub.xOnly()
		if !bip340Verify(px, msg, ours[:]) {
			t.Fatalf("case %d: btcec refuses the signature", i)
		}
		bad := ours
		bit := int(aux[0]) % (8 * SignatureSize)
		bad[bit/8] ^= 1 << (bit % 8)
		if bip340Verify(px, msg, bad[:]) {
			t.Fatalf("case %d: btcec accepts the signature with bit %d flipped", i, bit)
		}
		if i%5 == 0 {
			if ref := refSign(secret[:], msg[:], aux[:]); !bytes.Equal(ref, ours[:]) {
				t.Fatalf("case %d: reference signature %x, ours %x", i, ref, ours)
			}
			if !refVerify(px[:], msg[:], ours[:]) || refVerify(px[:], msg[:], bad[:]) {
				t.Fatalf("case %d: the reference disagrees with btcec", i)
			}
		}
	}
	if odd == 0 || odd == n {
		t.Fatalf("%d of %d keys had an odd y: one parity untested", odd, n)
	}
}

// TestBtcecSignaturesVerify: what btcec signs (its own nonce derivation,
// RFC 6979 without CustomNonce) verifies under PublicKey.Verify, and
// under the reference.
func TestBtcecSignaturesVerify(t *testing.T) {
	for range crossChecks(t, 40) {
		secret := random32(t)
		priv, _ := btcec.PrivKeyFromBytes(secret[:])
		k, err := keyFromBytes(secret[:])
		if err != nil {
			continue
		}
		st := NewStatement("neuron/test/1").Bytes(secret[:4])
		digest := st.Digest()
		sig, err := schnorr.Sign(priv, digest[:])
		if err != nil {
			t.Fatal(err)
		}
		px := k.pub.xOnly()
		if !k.PublicKey().Verify(st, sig.Serialize()) || !refVerify(px[:], digest[:], sig.Serialize()) {
			t.Fatal("a btcec signature does not verify")
		}
	}
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

// TestSignaturesOfTheReleaseBefore: signatures made by the signer before
// btcec (its own curve code, commit 58345dd), for a key of each parity
// over a statement with a time, verify now, are made again byte for byte
// from the same auxiliary randomness, and the keys keep their NeuronIds:
// the records existing stores hold stay valid without a migration.
func TestSignaturesOfTheReleaseBefore(t *testing.T) {
	for _, c := range []struct{ secret, pub, id, sig string }{
		{"B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF",
			"02dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659",
			"6cd1186b053c820d40b5d060dea72772b569fd360cf1dcbc4eec20be8607307e",
			"16c73494023dc5ec5c7f35a0a3724000c68ed9fb3871f07b7748f1d234ac361948b0cf17e08b069a5c60becd4005fee94e7ccfa22e3f5fa7b1553f613d197421"},
		{"0B432B2677937381AEF05BB02A66ECD012773062CF3FA2549E44F58ED2401710",
			"0325d1dff95105f5253c4022f628a996ad3a0d95fbf21d468a1b33f8c160d8f517",
			"0fdccb88cf3ac5254dc8010fb67861be078c2eb8a2713a2586aa7ff7f3c75485",
			"7a10076efa0753d20592e73b523e5280f113ef5f556eaa68ae268815742d248a73d38c84202950dd5f5b768b56464cff666c1c5cb5f669e9eab415267d1a201c"},
	} {
		k, err := keyFromBytes(unhex(t, c.secret))
		if err != nil {
			t.Fatal(err)
		}
		if k.PublicKey().String() != c.pub || k.ID().String() != c.id {
			t.Fatalf("key %s: public key %s, id %s; want %s, %s", c.secret[:8], k.PublicKey(), k.ID(), c.pub, c.id)
		}
		st := NewStatement("neuron/grant/1").Text("net").U64(3).Bool(true).
			Time(time.Date(2026, 12, 1, 10, 20, 30, 123456789, time.UTC))
		if !k.PublicKey().Verify(st, unhex(t, c.sig)) {
			t.Fatalf("key %s: the release's signature does not verify", c.secret[:8])
		}
		digest := st.Digest()
		got, err := bip340Sign(k.d, k.pub.xOnly(), k.pub.odd(), digest[:], [32]byte{7})
		if err != nil || hex.EncodeToString(got[:]) != c.sig {
			t.Fatalf("key %s: signature %x (%v), the release made %s", c.secret[:8], got, err, c.sig)
		}
	}
}
