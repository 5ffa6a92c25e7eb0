package neuron

import (
	"errors"
	"testing"
	"time"
)

// TestSignReturnsACopy: the bytes Sign returns are the caller's. Altering
// them used to alter what Made remembers, so Made vouched for bytes that
// Verify refuses (and the store's checkSigned trusts Made).
func TestSignReturnsACopy(t *testing.T) {
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	st := NewStatement("neuron/test/1").Text("op")
	sig, err := k.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	kept := append([]byte(nil), sig...)
	sig[0] ^= 1
	if k.Made(st, sig) {
		t.Fatal("Made vouches for altered signature bytes")
	}
	if k.PublicKey().Verify(st, sig) {
		t.Fatal("the altered signature verifies")
	}
	if !k.Made(st, kept) || !k.PublicKey().Verify(st, kept) {
		t.Fatal("the signature made is no longer recognised")
	}
}

// TestSignedTimes: a time is signed only in UTC and from 1970 to
// 2262-04-11T23:47:16.854775807Z, where its Unix nanoseconds are exact.
// The zero time, a time re-dated by 2^64 ns (which UnixNano wrapped onto
// the same bytes) and the same instant in another zone used to verify
// under one signature; now they are neither signed nor verified.
func TestSignedTimes(t *testing.T) {
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pub := k.PublicKey()
	st := func(at time.Time) *Statement { return NewStatement("neuron/grant/1").U64(1).Time(at) }
	at := time.Date(2026, 12, 1, 10, 20, 30, 5, time.UTC)
	sig, err := k.Sign(st(at))
	if err != nil {
		t.Fatal(err)
	}
	redated := at
	for range 4 {
		redated = redated.Add(1 << 62) // 2^64 ns in all: the year 2611
	}
	for name, bad := range map[string]time.Time{
		"re-dated by 2^64 ns": redated,
		"another zone":        at.In(time.FixedZone("UTC+5", 5*3600)),
		"the zero time":       {},
		"before 1970":         time.Unix(0, -1).UTC(),
		"after 2262":          maxSignedTime.Add(1),
	} {
		if pub.Verify(st(bad), sig) {
			t.Errorf("%s (%s): the signature of %s verifies", name, bad, at)
		}
		if _, err := k.Sign(st(bad)); !errors.Is(err, ErrUnsignableTime) {
			t.Errorf("%s (%s): sign: %v, want ErrUnsignableTime", name, bad, err)
		}
		if !errors.Is(st(bad).Err(), ErrUnsignableTime) {
			t.Errorf("%s: Err() = %v", name, st(bad).Err())
		}
	}
	for _, edge := range []time.Time{minSignedTime, maxSignedTime, time.Unix(0, 0).In(time.UTC), time.Now().UTC()} {
		s, err := k.Sign(st(edge))
		if err != nil || !pub.Verify(st(edge), s) {
			t.Errorf("%s: %v", edge.Format(time.RFC3339Nano), err)
		}
	}
	// A time in UTC whatever its Location is the same bytes: only the
	// offset matters (a Local zone at UTC+0 prints Z in the records).
	if !pub.Verify(st(at.In(time.FixedZone("GMT", 0))), sig) {
		t.Error("the same instant at offset 0 in another Location does not verify")
	}
}

// TestNewKeysHaveEvenY: a generated key's public key is 02 ‖ x, so its
// NeuronId is a function of its x-only (BIP-340) key; before, half the
// keys were 03 ‖ x.
func TestNewKeysHaveEvenY(t *testing.T) {
	for range 64 {
		k, err := GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		if pub := k.PublicKey(); pub[0] != 2 {
			t.Fatalf("generated key %s has an odd y", pub)
		}
		st := NewStatement("neuron/test/1").Text("even")
		sig, err := k.Sign(st)
		if err != nil || !k.PublicKey().Verify(st, sig) {
			t.Fatalf("sign: %v", err)
		}
	}
}

// TestOtherParityIsTheSameSigner: 02 ‖ x and 03 ‖ x verify the same
// signatures and name two NeuronIds; SameSigner says so, and the store
// refuses the one that is not the vault's (store's
// TestRootOfTheOtherParityIsRefused).
func TestOtherParityIsTheSameSigner(t *testing.T) {
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pub := k.PublicKey()
	other := pub
	other[0] = 3
	st := NewStatement("neuron/test/1").Text("parity")
	sig, err := k.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	if !other.Verify(st, sig) || !SameSigner(pub, other) || pub.ID() == other.ID() {
		t.Fatal("the other parity is not the same signer under another NeuronId")
	}
	k2, _ := GenerateKey()
	if SameSigner(pub, k2.PublicKey()) {
		t.Fatal("two keys are the same signer")
	}
}
