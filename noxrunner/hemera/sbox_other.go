//go:build !amd64 || purego

package hemera

// haveSIMD is false: no vector S-box on this platform (or purego).
var haveSIMD = false

func sbox16SIMD(x *State, c *[Width]uint64) { sbox16Go(x, c) }
