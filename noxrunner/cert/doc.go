// Package cert implements the proof profiles cyber-nox-public-trace-v2
// (ProfileV2: the streamed certificate, proved by ProveTo) and
// cyber-nox-public-trace-v1 (Profile, proved by Prove; verified for one
// release more): a public, stateless execution certificate with complete
// witness disclosure and linear verification cost. Verify and VerifyFrom
// read either, by its magic.
//
// What follows describes v1; v2 has the same steps and rules, with the
// statement split into a header (program, inputs, budget) before the
// witness and a trailer (outputs, reductions, calls) after it, a node
// table that prover and verifier collect at the same points, and no
// reference for the results the verifier knows: a compose's or a
// branch's is not written, an axis's or a quote's is one fixed byte
// (docs/certificate.md).
//
// A certificate is a statement (program tokens, public inputs, public
// outputs, reductions, budget) and a witness: the result of every reduce
// call of the run, in post-order, written as references into a table of
// distinct nouns that the certificate defines as it goes. The verifier
// walks the formulas once, and for every call checks the disclosed result
// against the pattern's rule and the budget against the cost rules
// (including the reservation rule). It never runs the program as a black
// box and never takes a value from the prover without checking it.
//
// Encoding is canonical: one valid byte string per statement and witness.
// See docs/certificate.md for the byte format.
package cert

// Profile is the exact profile id.
const Profile = "cyber-nox-public-trace-v1"

// Magic starts every certificate.
const Magic = "CYNXTRC1"

// Limits of the statement, shared with admission.
const (
	MaxProgramNodes = 4096
	MaxProgramDepth = 128
	MaxInputs       = 64
	MaxOutputs      = 4096
	// DepthLimit is the reduction depth limit the profile fixes (the
	// reference's).
	DepthLimit = 1000
	// MaxEncodedBytes bounds an uncompressed certificate.
	MaxEncodedBytes = 256 << 20
)
