package hemera

import (
	"math/rand/v2"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// withoutSIMD runs f with the vector code switched off.
func withoutSIMD(t testing.TB, f func()) {
	t.Helper()
	saved := haveSIMD
	haveSIMD = false
	defer func() { haveSIMD = saved }()
	f()
}

// TestSIMDMatchesGo compares the vector S-box with its pure-Go twin on
// random and edge lanes, lazy (non-canonical) ones included, and the whole
// permutation with and without the vector code. It fails, not skips, when
// the CPU has no vector path: then there is nothing to compare and the
// portable path is what the other tests cover.
func TestSIMDMatchesGo(t *testing.T) {
	if !haveSIMD {
		t.Log("no vector S-box on this CPU or build; the portable one is tested everywhere else")
		return
	}
	rng := rand.New(rand.NewPCG(31, 32))
	edges := []uint64{0, 1, 2, eps, eps + 1, 1 << 32, 1<<63 - 1, 1 << 63, field.P - 1, field.P, field.P + 1, 1<<64 - 2, 1<<64 - 1}
	for n := 0; n < 20000; n++ {
		var x State
		var c [Width]uint64
		for i := range x {
			switch rng.IntN(3) {
			case 0:
				x[i] = edges[rng.IntN(len(edges))]
			default:
				x[i] = rng.Uint64()
			}
			c[i] = rng.Uint64N(field.P)
			if rng.IntN(4) == 0 {
				c[i] = edges[rng.IntN(len(edges))] % field.P
			}
		}
		got, want := x, x
		sbox16SIMD(&got, &c)
		sbox16Go(&want, &c)
		for i := range got {
			if canon(got[i]) != canon(want[i]) {
				t.Fatalf("lane %d of %016x + %016x: vector %#x, Go %#x", i, x, c, got[i], want[i])
			}
		}
		if n < 2000 {
			s1, s2 := x, x
			Permute(&s1)
			withoutSIMD(t, func() { Permute(&s2) })
			if s1 != s2 {
				t.Fatalf("Permute(%016x): vector %016x, Go %016x", x, s1, s2)
			}
		}
	}
}
