package neuron

import "testing"

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
