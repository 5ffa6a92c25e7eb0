package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

var (
	// ErrTampered: a signed record does not verify under the neuron's key.
	// The record was altered (or written by another key); it is refused,
	// never trusted.
	ErrTampered = errors.New("signed record does not verify")
	// ErrSubject: the neuron root names another key than the trusted one
	// (the vault holds another neuron's key).
	ErrSubject = errors.New("the neuron root is another key's")
	// ErrUntrusted: the store holds signed records but was opened without
	// the neuron's public key to check them.
	ErrUntrusted = errors.New("no neuron key to check signed records")
)

// verifiedCache remembers which (kind, record bytes) verified, so that a
// record read again with the same bytes is not verified again: a
// signature is a function of the bytes and the one trusted key alone.
// Altered bytes miss the cache and are checked.
type verifiedCache struct {
	mu sync.Mutex
	m  map[[32]byte]struct{}
}

const maxVerified = 8192

func (c *verifiedCache) has(k [32]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[k]
	return ok
}

func (c *verifiedCache) add(k [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[32]byte]struct{}{}
	}
	if len(c.m) >= maxVerified {
		for x := range c.m {
			delete(c.m, x)
			break
		}
	}
	c.m[k] = struct{}{}
}

func cacheKey(kind string, raw []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write(raw)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// Trust is the neuron key signed records are checked against, set once,
// and the key this process signs with. It is a value of its own, given
// to every store of a home that checks signatures (the home's file, and
// a shared job store beside it, whose job claims this host signs), so
// that one key set once is trusted by all of them: nothing about trust
// is part of the store interfaces.
type Trust struct {
	pub    atomic.Pointer[neuron.PublicKey]
	signer atomic.Pointer[Signer]
	// recKey is the signer's record key, derived once (RecordKey).
	recKey atomic.Pointer[neuron.RecordKey]
	// verified remembers records that passed (cacheKey).
	verified verifiedCache
}

// NewTrust is a Trust of no key yet.
func NewTrust() *Trust { return &Trust{} }

// Key is the public key signed records are checked against (nil: none).
func (t *Trust) Key() *neuron.PublicKey { return t.pub.Load() }

// Signer is the key this process signs with (nil: none).
func (t *Trust) Signer() Signer {
	if k := t.signer.Load(); k != nil {
		return *k
	}
	return nil
}

// ErrTrustSet: Trust was called with another key than the one set.
var ErrTrustSet = errors.New("the store already trusts another neuron key")

// Set sets the key signed records are checked against, once: neuron
// init sets it on stores opened before the key existed.
func (t *Trust) Set(pub neuron.PublicKey) error {
	k := pub
	if t.pub.CompareAndSwap(nil, &k) {
		return nil
	}
	if *t.pub.Load() != pub {
		return ErrTrustSet
	}
	return nil
}

// SetSigner is Set for the key this process signs with: records it
// signed itself are taken as verified when written (they are valid by
// construction); everything read from a store is still verified. With
// it the home's store tags every fencing record it writes and checks
// the tag of every one it reads.
func (t *Trust) SetSigner(k Signer) error {
	if err := t.Set(k.PublicKey()); err != nil {
		return err
	}
	t.signer.Store(&k)
	t.recKey.CompareAndSwap(nil, k.RecordKey())
	return nil
}

// RecordKey is the key that authenticates the home's fencing records:
// the signer's (nil: no signer).
func (t *Trust) RecordKey() *neuron.RecordKey { return t.recKey.Load() }

// Preverify checks a signed record's signature outside any transaction,
// so that writing exactly that record inside one verifies nothing more.
func (t *Trust) Preverify(r Signed) error {
	raw, err := EncodeRecord(r)
	if err != nil {
		return fmt.Errorf("encode a signed record: %w", err)
	}
	st := r.Statement()
	return t.CheckEncoded("preverify "+st.Kind(), st, r.SignatureBytes(), raw)
}

// Check verifies a signature about to be written (a store that keeps no
// encoding of its own to remember: etcd's job claims).
func (t *Trust) Check(what string, st *neuron.Statement, sig []byte) error {
	pub := t.pub.Load()
	if pub == nil {
		return fmt.Errorf("%s: %w", what, ErrUntrusted)
	}
	if signer := t.Signer(); signer != nil && signer.Made(st, sig) {
		return nil
	}
	if !pub.Verify(st, sig) {
		return fmt.Errorf("%s: %w", what, ErrTampered)
	}
	return nil
}

// CheckEncoded verifies a signed record read as raw (or about to be
// written as raw), and remembers raw as verified: a driver that keeps
// the record's encoding (bbolt's) checks the same bytes once.
func (t *Trust) CheckEncoded(what string, st *neuron.Statement, sig []byte, raw []byte) error {
	pub := t.pub.Load()
	if pub == nil {
		return fmt.Errorf("%s: %w", what, ErrUntrusted)
	}
	k := cacheKey(st.Kind(), raw)
	if raw != nil && t.verified.has(k) {
		return nil
	}
	if signer := t.Signer(); raw != nil && signer != nil && signer.Made(st, sig) {
		t.verified.add(k)
		return nil
	}
	if !pub.Verify(st, sig) {
		return fmt.Errorf("%s: %w", what, ErrTampered)
	}
	if raw != nil {
		t.verified.add(k)
	}
	return nil
}

// Signer is the neuron key of this process as the store sees it: its
// public key, whether it made a given signature, and the key that
// authenticates the store's fencing records (supervisor/store/bolt, authenticated.go).
type Signer interface {
	PublicKey() neuron.PublicKey
	Made(st *neuron.Statement, sig []byte) bool
	RecordKey() *neuron.RecordKey
}
