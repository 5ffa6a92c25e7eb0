package hostile

import (
	"math/rand/v2"
)

// PaddedStatement is a certificate of QuoteProgram under budget (no
// inputs) whose statement is the honest one (one reduction, one call,
// output 0) and whose witness is n bytes of noise: a verifier accepts
// its statement for the job and refuses its first step. The noise is
// seeded, so the bytes are the same every run, and does not compress:
// as an artifact it weighs about n bytes, which is what the tests of
// a large inline artifact need (its size, not its verification).
func PaddedStatement(budget uint64, n int, seed uint64) []byte {
	return witnessOf(budget, 1, func(b []byte) []byte {
		return append(b, Noise(n, seed)...)
	})
}

// Noise is n seeded pseudo-random bytes.
func Noise(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{0: byte(seed), 1: byte(seed >> 8), 2: byte(seed >> 16), 3: byte(seed >> 24)})
	_, _ = r.Read(b)
	return b
}
