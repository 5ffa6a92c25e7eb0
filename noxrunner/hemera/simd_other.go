//go:build !amd64 || purego

package hemera

// haveSIMD is false: no vector code on this platform (or with purego).
var haveSIMD = false

func externalSIMD(x *State)                  { external(x) }
func fullRoundsSIMD(x *State, c *[64]uint64) { fullRoundsGo(x, c) }

func projectiveRoundsSIMD(x *State, c *[16]uint64) uint64 { return projectiveRounds(x, c) }

func scaledFullRoundsSIMD(x *State, c *[64]uint64, k uint64) {
	for i := range x {
		x[i] = mul(x[i], k)
	}
	fullRoundsGo(x, c)
}

func external2SIMD(x, y *State) { external(x); external(y) }

func fullRounds2SIMD(x, y *State, c *[64]uint64) { fullRoundsGo(x, c); fullRoundsGo(y, c) }

func projectiveRounds2SIMD(x, y *State, c *[16]uint64) (zx, zy uint64) {
	return projectiveRounds(x, c), projectiveRounds(y, c)
}

func scaledFullRounds2SIMD(x, y *State, c *[64]uint64, kx, ky uint64) {
	scaledFullRoundsSIMD(x, c, kx)
	scaledFullRoundsSIMD(y, c, ky)
}
