// Package neuron is the neuron's key: the secp256k1 key in the home's
// vault, the NeuronId derived from it (profile cyber-secp256k1-hemera-v1:
// the Hemera particle of the compressed public key), and BIP-340 Schnorr
// signatures over domain-separated statements: verified with btcec
// (github.com/btcsuite/btcd/btcec/v2/schnorr), made with a constant-time
// base multiplication over decred's field (schnorr.go, basemult.go).
//
// The private key never leaves this package's Key value: it has no
// exported accessor, prints and marshals as a redaction, and only the
// vault file holds its bytes. Workers, records, tokens, logs and API
// answers carry public keys, ids and signatures only.
package neuron
