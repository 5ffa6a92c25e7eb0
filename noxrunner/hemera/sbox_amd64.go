//go:build !purego

package hemera

import "golang.org/x/sys/cpu"

// haveSIMD reports whether the AVX-512 S-box can run here (the CPU has
// AVX-512F and the OS saves its registers; x/sys/cpu checks both). Tests
// switch it off to run the pure-Go twin on the same inputs.
var haveSIMD = cpu.X86.HasAVX512F

//go:noescape
func sbox16AVX512(x *[16]uint64, c *[16]uint64)

func sbox16SIMD(x *State, c *[Width]uint64) { sbox16AVX512((*[16]uint64)(x), c) }
