package store

import (
	"errors"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// A Trust checks signed records against its one key: none is
// ErrUntrusted, a record another key signed or an altered one
// ErrTampered, a second key ErrTrustSet; the signer's own key is the
// trusted one.
func TestTrust(t *testing.T) {
	s := NewTrust()
	key, err := neuron.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	other, err := neuron.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	signed := func(k *neuron.Key) *JobClaim {
		c := &JobClaim{Job: "signed", Attempt: 1, Worker: protocol.WorkerDescriptor{Network: "testnet"}, Created: time.Unix(3, 0).UTC()}
		sig, err := k.Sign(c.Statement())
		if err != nil {
			t.Fatal(err)
		}
		c.Signature = sig
		return c
	}
	if err := s.Preverify(signed(key)); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("a signed record before a key is trusted: %v", err)
	}
	if err := s.Set(key.PublicKey()); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(key.PublicKey()); err != nil {
		t.Fatalf("trusting the same key again: %v", err)
	}
	if err := s.Set(other.PublicKey()); !errors.Is(err, ErrTrustSet) {
		t.Fatalf("trusting another key: %v", err)
	}
	if err := s.SetSigner(other); !errors.Is(err, ErrTrustSet) {
		t.Fatalf("signing with another key: %v", err)
	}
	if err := s.SetSigner(key); err != nil {
		t.Fatal(err)
	}
	if err := s.Preverify(signed(key)); err != nil {
		t.Fatalf("a record the trusted key signed: %v", err)
	}
	if err := s.Preverify(signed(other)); !errors.Is(err, ErrTampered) {
		t.Fatalf("a record another key signed: %v", err)
	}
	altered := signed(key)
	altered.Generation++
	if err := s.Preverify(altered); !errors.Is(err, ErrTampered) {
		t.Fatalf("an altered record: %v", err)
	}
}
