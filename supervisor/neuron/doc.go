// Package neuron is the neuron's key: the secp256k1 key in the home's
// vault, the NeuronId derived from it (profile cyber-secp256k1-hemera-v1:
// the Hemera particle of the compressed public key), and BIP-340 Schnorr
// signatures over domain-separated statements.
//
// The private key never leaves this package's Key value: it has no
// exported accessor, prints and marshals as a redaction, and only the
// vault file holds its bytes. Workers, records, tokens, logs and API
// answers carry public keys, ids and signatures only.
package neuron
