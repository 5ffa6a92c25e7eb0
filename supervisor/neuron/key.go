package neuron

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/hemera"
)

// Profile names how a NeuronId is derived from a key: the Hemera particle
// of the 33-byte compressed secp256k1 public key.
const Profile = "cyber-secp256k1-hemera-v1"

// PublicKeySize is a compressed secp256k1 public key's length.
const PublicKeySize = 33

// ErrKey is wrapped by every refusal of key material.
var ErrKey = errors.New("invalid neuron key")

// ID is a NeuronId: 32 bytes, written as lowercase hex.
type ID [32]byte

func (id ID) String() string               { return hex.EncodeToString(id[:]) }
func (id ID) IsZero() bool                 { return id == ID{} }
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }
func (id *ID) UnmarshalText(b []byte) error {
	return decodeHex32((*[32]byte)(id), b, "neuron id")
}

// Particle is a 32-byte content id (a policy, a program), lowercase hex.
type Particle [32]byte

func (p Particle) String() string               { return hex.EncodeToString(p[:]) }
func (p Particle) IsZero() bool                 { return p == Particle{} }
func (p Particle) MarshalText() ([]byte, error) { return []byte(p.String()), nil }
func (p *Particle) UnmarshalText(b []byte) error {
	return decodeHex32((*[32]byte)(p), b, "particle")
}

// ParseParticle reads 64 hex digits.
func ParseParticle(s string) (Particle, error) {
	var p Particle
	err := p.UnmarshalText([]byte(s))
	return p, err
}

func decodeHex32(dst *[32]byte, b []byte, what string) error {
	if len(b) != 64 {
		return fmt.Errorf("%s: want 64 hex digits, got %d characters", what, len(b))
	}
	if _, err := hex.Decode(dst[:], b); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// PublicKey is a neuron's compressed secp256k1 public key.
type PublicKey [PublicKeySize]byte

func (k PublicKey) String() string               { return hex.EncodeToString(k[:]) }
func (k PublicKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }
func (k *PublicKey) UnmarshalText(b []byte) error {
	if len(b) != 2*PublicKeySize {
		return fmt.Errorf("%w: public key: want %d hex digits", ErrKey, 2*PublicKeySize)
	}
	var raw PublicKey
	if _, err := hex.Decode(raw[:], b); err != nil {
		return fmt.Errorf("%w: public key: %v", ErrKey, err)
	}
	if _, err := secp256k1.ParsePubKey(raw[:]); err != nil {
		return fmt.Errorf("%w: public key: %v", ErrKey, err)
	}
	*k = raw
	return nil
}

// ID is the NeuronId of the key (profile cyber-secp256k1-hemera-v1): the
// Hemera particle of its 33 bytes. Keys made since the x-only rule have
// an even y, so their NeuronId is that of 02 ‖ x, a function of the
// BIP-340 key alone; see SameSigner for the parity.
func (k PublicKey) ID() ID { return ID(hemera.Hash(k[:]).Bytes()) }

// xOnly is the BIP-340 public key: the x coordinate.
func (k PublicKey) xOnly() (x [32]byte) {
	copy(x[:], k[1:])
	return x
}

// odd reports whether the key's y is odd (prefix 03).
func (k PublicKey) odd() bool { return k[0] == 3 }

// SameSigner reports whether a and b accept the same signatures: BIP-340
// verifies with the x coordinate only, so 02 ‖ x and 03 ‖ x (two
// NeuronIds) do. A key is trusted by its 33 bytes (the store's root must
// name the vault's key byte for byte), so the other parity of a trusted
// key is refused, never taken for a second neuron: this says which pairs
// that rule is about.
func SameSigner(a, b PublicKey) bool { return a.xOnly() == b.xOnly() }

// Verify checks a signature of the statement under this key. A statement
// that cannot be signed (Statement.Err) verifies under no key.
func (k PublicKey) Verify(st *Statement, sig []byte) bool {
	if st.Err() != nil {
		return false
	}
	return bip340Verify(k.xOnly(), st.Digest(), sig)
}

// Key is a neuron's private key. It prints, logs and marshals as a
// redaction; its bytes are reachable only through Sign.
type Key struct {
	// d is behind a pointer so that even a Key embedded by value in an
	// unexported field prints an address, never the scalar.
	d   *secp256k1.ModNScalar
	pub PublicKey
	// made remembers the signatures this key made recently, by the digest
	// they sign (Made).
	made *madeSignatures
}

type madeSignatures struct {
	mu sync.Mutex
	m  map[[32]byte][SignatureSize]byte
}

// maxMade bounds what Made remembers: the signatures of the records in
// flight.
const maxMade = 8192

// GenerateKey makes a new key from the system's random source. Its public
// key has an even y (the secret is negated when it would not: the same
// BIP-340 key), so it is 02 ‖ x and the NeuronId is a function of the
// x-only key. Keys made before this rule may have an odd y; they keep
// their NeuronId (docs/fencing.md, "Signatures").
func GenerateKey() (*Key, error) {
	sk, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		return nil, fmt.Errorf("generate neuron key: %w", err)
	}
	k := newKey(&sk.Key)
	sk.Zero()
	if k.pub.odd() {
		d := evenSecret(k.d, true)
		k.d.Zero()
		k = newKey(&d)
		d.Zero()
	}
	return k, nil
}

// keyFromBytes reads a 32-byte secret scalar in [1, n-1].
func keyFromBytes(b []byte) (*Key, error) {
	if len(b) != 32 {
		return nil, fmt.Errorf("%w: the secret is %d bytes, want 32", ErrKey, len(b))
	}
	var d secp256k1.ModNScalar
	if overflow := d.SetByteSlice(b); overflow || d.IsZero() {
		return nil, fmt.Errorf("%w: the secret is out of range", ErrKey)
	}
	return newKey(&d), nil
}

// newKey derives the public key of the secret d (nonzero) with the
// constant-time base multiplication: decred's PubKey would look the
// secret's bytes up in a table.
func newKey(d *secp256k1.ModNScalar) *Key {
	dc := *d
	k := &Key{d: &dc, made: &madeSignatures{m: map[[32]byte][SignatureSize]byte{}}}
	x, y := ctBaseMult(&dc)
	k.pub[0] = 2 + byte(y.IsOddBit())
	x.PutBytesUnchecked(k.pub[1:])
	return k
}

// PublicKey of the key.
func (k *Key) PublicKey() PublicKey { return k.pub }

// ID is the NeuronId of the key.
func (k *Key) ID() ID { return k.pub.ID() }

// Sign signs the statement (BIP-340 with 32 bytes of fresh auxiliary
// randomness from crypto/rand, BIP-340's randomized nonce). A statement
// with a field that cannot be signed (Statement.Err) is refused. The
// signature returned is the caller's own copy: what Made remembers cannot
// be changed through it.
func (k *Key) Sign(st *Statement) ([]byte, error) {
	if err := st.Err(); err != nil {
		return nil, fmt.Errorf("sign %s: %w", st.kind, err)
	}
	var aux [32]byte
	if _, err := rand.Read(aux[:]); err != nil {
		return nil, fmt.Errorf("sign %s: %w", st.kind, err)
	}
	digest := st.Digest()
	sig, err := bip340Sign(k.d, k.pub.xOnly(), k.pub.odd(), digest[:], aux)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", st.kind, err)
	}
	k.made.mu.Lock()
	if len(k.made.m) >= maxMade {
		clear(k.made.m)
	}
	k.made.m[digest] = sig
	k.made.mu.Unlock()
	return append([]byte(nil), sig[:]...), nil
}

// Made reports whether this key, in this process, made sig over st: a
// signature it produced itself is valid by construction, so the store
// need not verify a record its own process just signed (a record read
// back from the file is verified whatever Made says about other bytes).
func (k *Key) Made(st *Statement, sig []byte) bool {
	k.made.mu.Lock()
	defer k.made.mu.Unlock()
	if st.Err() != nil {
		return false
	}
	mine, ok := k.made.m[st.Digest()]
	return ok && string(mine[:]) == string(sig)
}

// secret is the 32-byte scalar, for the vault file only.
func (k *Key) secret() [32]byte { return k.d.Bytes() }

const redacted = "neuron key (redacted)"

// The redactions have value receivers so that a Key printed by value is
// redacted too.
func (Key) String() string                 { return redacted }
func (Key) GoString() string               { return redacted }
func (Key) Format(f fmt.State, _ rune)     { f.Write([]byte(redacted)) }
func (Key) LogValue() slog.Value           { return slog.StringValue(redacted) }
func (Key) MarshalJSON() ([]byte, error)   { return nil, errNeverMarshalled }
func (Key) MarshalText() ([]byte, error)   { return nil, errNeverMarshalled }
func (Key) MarshalBinary() ([]byte, error) { return nil, errNeverMarshalled }

var errNeverMarshalled = errors.New("a neuron key is never marshalled")
