package neuron

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// BIP-340 (Schnorr signatures for secp256k1). Public keys are x-only (32
// bytes); signatures are 64 bytes, R.x ‖ s.
//
// Verification is btcec's (github.com/btcsuite/btcd/btcec/v2/schnorr): it
// handles public data only, so its variable time costs nothing. Signing
// is BIP-340's algorithm over decred's constant-time scalar arithmetic
// with the constant-time base multiplication of basemult.go, because
// btcec's Sign multiplies both the key and the nonce with decred's
// variable-time table (docs/design/signing.md); TestSignMatchesBtcec holds
// every signature to btcec's, byte for byte, for the same key, message
// and auxiliary randomness.

// SignatureSize is the length of a BIP-340 signature.
const SignatureSize = 64

var errBadSecret = errors.New("bip340: secret key out of range")

// taggedHash is SHA256(SHA256(tag) ‖ SHA256(tag) ‖ parts...).
func taggedHash(tag string, parts ...[]byte) [32]byte {
	th := sha256.Sum256([]byte(tag))
	h := sha256.New()
	h.Write(th[:])
	h.Write(th[:])
	for _, p := range parts {
		h.Write(p)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// evenSecret is the secret d' whose public key has an even y: d itself,
// or n − d when d·G has an odd y (pubOdd, which is public: the key's
// prefix byte).
func evenSecret(d *secp256k1.ModNScalar, pubOdd bool) secp256k1.ModNScalar {
	e := *d
	if pubOdd {
		e.Negate()
	}
	return e
}

// nonce is BIP-340's k' = int(tagged_hash("BIP0340/nonce", t ‖ P.x ‖ m))
// mod n, with t = d' xor tagged_hash("BIP0340/aux", aux).
func nonce(d *secp256k1.ModNScalar, px *[32]byte, msg []byte, aux *[32]byte) secp256k1.ModNScalar {
	db := d.Bytes()
	t := taggedHash("BIP0340/aux", aux[:])
	subtle.XORBytes(t[:], t[:], db[:])
	clear(db[:])
	rand := taggedHash("BIP0340/nonce", t[:], px[:], msg)
	clear(t[:])
	var k secp256k1.ModNScalar
	k.SetBytes(&rand)
	clear(rand[:])
	return k
}

// bip340Sign signs msg (any length; the neuron's are 32-byte digests)
// with the secret d, whose public key has the x coordinate px and an odd
// y when pubOdd, and 32 bytes of auxiliary randomness. Every step that
// touches d or the nonce runs in constant time, or on a randomly blinded
// value (R's inversion).
//
// BIP-340 suggests verifying a signature before returning it, against
// faults in the arithmetic; that would double its cost (btcec's
// verification is about three signatures), and what it guards against (a
// fault induced in this process) is not this product's threat, so it is
// not done here (FastSign in btcec's terms).
func bip340Sign(d *secp256k1.ModNScalar, px [32]byte, pubOdd bool, msg []byte, aux [32]byte) ([SignatureSize]byte, error) {
	var sig [SignatureSize]byte
	if d.IsZero() {
		return sig, errBadSecret
	}
	de := evenSecret(d, pubOdd)
	defer de.Zero()
	k := nonce(&de, &px, msg, &aux)
	defer k.Zero()
	if k.IsZero() {
		return sig, errors.New("bip340: nonce is zero")
	}
	rx, ry := ctBaseMult(&k)
	// k becomes n − k when R has an odd y; both are computed and one is
	// kept by a mask, so the choice does not show in the time.
	kb := k.Bytes()
	var kn secp256k1.ModNScalar
	kn.NegateVal(&k)
	nb := kn.Bytes()
	subtle.ConstantTimeCopy(int(ry.IsOddBit()), kb[:], nb[:])
	k.SetBytes(&kb)
	clear(kb[:])
	clear(nb[:])
	kn.Zero()

	rb := rx.Bytes()
	e := challenge(rb[:], px[:], msg)
	var s secp256k1.ModNScalar
	s.Mul2(&e, &de).Add(&k)
	sb := s.Bytes()
	s.Zero()
	copy(sig[:32], rb[:])
	copy(sig[32:], sb[:])
	return sig, nil
}

func challenge(rx, px, msg []byte) secp256k1.ModNScalar {
	h := taggedHash("BIP0340/challenge", rx, px, msg)
	var e secp256k1.ModNScalar
	e.SetBytes(&h)
	return e
}

// bip340Verify checks sig over the 32-byte msg under the x-only public
// key px, with btcec.
func bip340Verify(px [32]byte, msg [32]byte, sig []byte) bool {
	if len(sig) != SignatureSize {
		return false
	}
	pub, err := schnorr.ParsePubKey(px[:])
	if err != nil {
		return false
	}
	s, err := schnorr.ParseSignature(sig)
	if err != nil {
		return false
	}
	return s.Verify(msg[:], pub)
}
