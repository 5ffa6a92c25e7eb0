//go:build !purego

package hemera

import "golang.org/x/sys/cpu"

// haveSIMD reports whether the AVX-512 code can run here (the CPU has
// AVX-512F and the OS saves its registers; x/sys/cpu checks both). Tests
// switch it off to run the pure-Go twins on the same inputs.
var haveSIMD = cpu.X86.HasAVX512F

//go:noescape
func externalAVX512(x *[16]uint64)

//go:noescape
func fullRoundsAVX512(x *[16]uint64, c *[64]uint64)

func externalSIMD(x *State) { externalAVX512((*[16]uint64)(x)) }
func fullRoundsSIMD(x *State, c *[64]uint64) {
	fullRoundsAVX512((*[16]uint64)(x), c)
}

//go:noescape
func partialRoundsAVX512(x *[16]uint64, c *[16]uint64, d *[16]uint64) uint64

//go:noescape
func scaledFullRoundsAVX512(x *[16]uint64, c *[64]uint64, k uint64)

// projectiveRoundsSIMD runs the partial rounds and returns their
// denominator Z, the lanes left un-normalised (x_i = X_i / Z).
func projectiveRoundsSIMD(x *State, c *[16]uint64) uint64 {
	return partialRoundsAVX512((*[16]uint64)(x), c, &internalDiag)
}

// scaledFullRoundsSIMD multiplies every lane by k, then runs four full
// rounds with the constants c.
func scaledFullRoundsSIMD(x *State, c *[64]uint64, k uint64) {
	scaledFullRoundsAVX512((*[16]uint64)(x), c, k)
}

// The two-state routines (simd2_amd64.s), for Permute2.

//go:noescape
func external2AVX512(x, y *[16]uint64)

//go:noescape
func fullRounds2AVX512(x, y *[16]uint64, c *[64]uint64)

//go:noescape
func partialRounds2AVX512(x, y *[16]uint64, c *[16]uint64, d *[16]uint64) (zx, zy uint64)

//go:noescape
func scaledFullRounds2AVX512(x, y *[16]uint64, c *[64]uint64, kx, ky uint64)

func external2SIMD(x, y *State) { external2AVX512((*[16]uint64)(x), (*[16]uint64)(y)) }

func fullRounds2SIMD(x, y *State, c *[64]uint64) {
	fullRounds2AVX512((*[16]uint64)(x), (*[16]uint64)(y), c)
}

func projectiveRounds2SIMD(x, y *State, c *[16]uint64) (zx, zy uint64) {
	return partialRounds2AVX512((*[16]uint64)(x), (*[16]uint64)(y), c, &internalDiag)
}

func scaledFullRounds2SIMD(x, y *State, c *[64]uint64, kx, ky uint64) {
	scaledFullRounds2AVX512((*[16]uint64)(x), (*[16]uint64)(y), c, kx, ky)
}
