package hemera

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// bothPaths runs f with the vector code as the CPU allows and, where it
// runs, again without it, so the portable Permute2 is tested here too.
func bothPaths(t *testing.T, f func(t *testing.T)) {
	t.Run("default", f)
	if haveSIMD {
		t.Run("portable", func(t *testing.T) { withoutSIMD(t, func() { f(t) }) })
	}
}

// checkPermute2 fails t unless Permute2(a, b) is Permute(a), Permute(b).
func checkPermute2(t *testing.T, a, b State) {
	t.Helper()
	wantA, wantB := a, b
	Permute(&wantA)
	Permute(&wantB)
	gotA, gotB := a, b
	Permute2(&gotA, &gotB)
	if gotA != wantA || gotB != wantB {
		t.Fatalf("Permute2(%016x, %016x) = %016x, %016x; Permute gives %016x, %016x", a, b, gotA, gotB, wantA, wantB)
	}
}

// TestPermute2Vectors runs the spec's vectors through both places of
// Permute2, against each other and against a random state.
func TestPermute2Vectors(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(41, 42))
		zero, iota, r := State{}, iota16(), lazyState(rng)
		checkPermute2(t, zero, iota)
		checkPermute2(t, iota, zero)
		checkPermute2(t, zero, r)
		checkPermute2(t, r, iota)
		checkPermute2(t, iota, iota)
		a, b := zero, iota
		Permute2(&a, &b)
		if [4]uint64(a[:4]) != [4]uint64{0xf3fe057df4c341a1, 0xf8334a1ef9887195, 0x8e1e0ce64e5d20ad, 0x291dc6bf9addc565} ||
			[4]uint64(b[:4]) != [4]uint64{0x446cdbec7fe80211, 0x1dece38f4ccafb02, 0xed7466df4db1e166, 0xf9fe02d996bc72e3} {
			t.Fatalf("Permute2 of the vectors: %016x, %016x", a[:4], b[:4])
		}
	})
}

// TestPermute2Random compares Permute2 with Permute on random, edge and
// non-canonical lanes.
func TestPermute2Random(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(43, 44))
		for range 3000 {
			checkPermute2(t, lazyState(rng), lazyState(rng))
		}
	})
}

// TestPermute2ZeroLane runs the inputs whose partial-round lane 0 hits
// zero (zero_test.go) in either place of Permute2, beside a random state
// and beside another such input, so each state's zero branch is taken
// while the other's is not, and both at once.
func TestPermute2ZeroLane(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(45, 46))
		var zeros []State
		for k := 0; k < 16; k++ {
			for n := 1; n <= 4 && k+n <= 16; n++ {
				zeros = append(zeros, State(backToInput(zeroAt(rng, k, n), k)))
			}
		}
		for i, z := range zeros {
			r := lazyState(rng)
			checkPermute2(t, z, r)
			checkPermute2(t, r, z)
			checkPermute2(t, z, zeros[(i+7)%len(zeros)])
		}
	})
}

// FuzzPermute2 compares Permute2 with Permute (and so with the reference
// model FuzzPermuteTwins holds it to) on arbitrary lanes, with and
// without the vector code.
func FuzzPermute2(f *testing.F) {
	f.Add(make([]byte, 256))
	seed := make([]byte, 256)
	for i := range seed {
		seed[i] = byte(i*37 + 1)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		var s [2]State
		for i := range 2 * Width {
			var w [8]byte
			copy(w[:], b[min(len(b), 8*i):])
			s[i/Width][i%Width] = binary.LittleEndian.Uint64(w[:])
		}
		checkPermute2(t, s[0], s[1])
		withoutSIMD(t, func() { checkPermute2(t, s[0], s[1]) })
	})
}
