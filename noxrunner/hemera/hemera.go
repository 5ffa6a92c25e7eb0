// Package hemera implements Hemera, the hash behind nox identity: a
// Poseidon2-style permutation over the Goldilocks field (width 16, rate 8,
// 8 full rounds with x^7 and 16 partial rounds with x^(−1) on lane 0), a
// sponge that absorbs 7 bytes per field element, and the leaf/node tree
// primitives nox uses to give every atom and pair a 32-byte particle.
//
// The package is pinned, bit for bit, to the hemera 0.3 line as described in
// the shared spec (nox-vm.md §3 and §4): matrices, round constants (the
// self-bootstrapped table), capacity layout, padding and length lane. Any
// change to observable output is a change of identity for every stored
// particle, so the tests pin the spec's vectors and re-derive the constant
// table from its bootstrap.
//
// How the permutation is made fast without changing a bit of it — the
// projective partial rounds, the AVX-512 code and its pure-Go twins — and
// the measured figures are in docs/hashing.md; in short, one permutation
// takes about 1.4 µs here (5.5 µs before), a fresh atom's digest 2.9 µs.
//
// A permutation is bound by the latency of its dependency chains, so two
// independent ones run side by side (Permute2, and the digests built on
// it: AtomDigest2, PairDigest2, HashData2) cost about 0.6 of two apart
// with the AVX-512 code. A hash chain cannot use them (each link waits for
// the previous digest); a verifier, which knows every hash's input, can.
package hemera

const (
	// Width is the number of field elements in the permutation state.
	Width = 16
	// Rate is the number of lanes the sponge absorbs into (lanes 0..7);
	// lanes 8..15 are the capacity.
	Rate = 8
)

// State is the permutation state: 16 Goldilocks elements.
type State [Width]uint64
