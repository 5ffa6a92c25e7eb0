package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

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

// checkSigned verifies a signed record read as raw (or about to be
// written as raw).
func (s *Bolt) checkSigned(what string, st *neuron.Statement, sig []byte, raw []byte) error {
	trust := s.trust.Load()
	if trust == nil {
		return fmt.Errorf("%s: %w", what, ErrUntrusted)
	}
	k := cacheKey(st.Kind(), raw)
	if raw != nil && s.verified.has(k) {
		return nil
	}
	if signer := s.signer.Load(); raw != nil && signer != nil && (*signer).Made(st, sig) {
		s.verified.add(k)
		return nil
	}
	if !trust.Verify(st, sig) {
		return fmt.Errorf("%s: %w", what, ErrTampered)
	}
	if raw != nil {
		s.verified.add(k)
	}
	return nil
}

// Trusted is the public key signed records are checked against (nil:
// none).
func (s *Bolt) Trusted() *neuron.PublicKey { return s.trust.Load() }

// Signer is the neuron key of this process as the store sees it: its
// public key, whether it made a given signature, and the key that
// authenticates the store's fencing records (authenticated.go).
type Signer interface {
	PublicKey() neuron.PublicKey
	Made(st *neuron.Statement, sig []byte) bool
	RecordKey() *neuron.RecordKey
}

// TrustSigner is Trust for the key this process signs with: records it
// signed itself are taken as verified when written (they are valid by
// construction); everything read from the file is still verified. With
// it the store tags every fencing record it writes and checks the tag of
// every one it reads.
func (s *Bolt) TrustSigner(k Signer) error {
	if err := s.Trust(k.PublicKey()); err != nil {
		return err
	}
	s.signer.Store(&k)
	s.recKey.CompareAndSwap(nil, k.RecordKey())
	return nil
}

// ErrTrustSet: Trust was called with another key than the one set.
var ErrTrustSet = errors.New("the store already trusts another neuron key")

// Trust sets the key signed records are checked against, once: neuron
// init calls it on a store opened before the key existed.
func (s *Bolt) Trust(pub neuron.PublicKey) error {
	k := pub
	if s.trust.CompareAndSwap(nil, &k) {
		return nil
	}
	if *s.trust.Load() != pub {
		return ErrTrustSet
	}
	return nil
}
