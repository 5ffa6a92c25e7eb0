package bolt

import (
	"testing"

	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// TestRootOfTheOtherParityIsRefused: BIP-340 verifies with the x
// coordinate only, so the vault's key 0x ‖ x and its other parity accept
// the same signatures under two NeuronIds. A root that names the other
// parity (and its NeuronId), with a signature that verifies, is another
// subject: the store trusts the vault's 33 bytes, not the x coordinate.
func TestRootOfTheOtherParityIsRefused(t *testing.T) {
	f := newFx(t)
	other := f.key.PublicKey()
	other[0] ^= 1 // 02 ↔ 03
	if !neuron.SameSigner(other, f.key.PublicKey()) {
		t.Fatal("not the other parity")
	}
	r := f.root(0, 1, nil)
	r.PublicKey, r.Neuron = other, other.ID()
	r.Signature = f.sign(r.Statement())
	if !other.Verify(r.Statement(), r.Signature) {
		t.Fatal("the signature does not verify under the other parity")
	}
	wantErr(t, "a root of the other parity", f.update(func(tx store.LocalTx) error { return tx.PutRoot(r) }), store.ErrSubject)
	f.must(f.update(func(tx store.LocalTx) error { return tx.PutRoot(f.root(0, 1, nil)) }))
}
