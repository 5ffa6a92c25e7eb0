package hemera

import (
	"encoding/binary"
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

// lazyState returns 16 lanes, random or edge values, non-canonical
// representatives included.
func lazyState(rng *rand.Rand) State {
	edges := []uint64{0, 1, 2, eps, eps + 1, 1 << 32, 1<<63 - 1, 1 << 63, field.P - 1, field.P, field.P + 1, 1<<64 - 2, 1<<64 - 1}
	var x State
	for i := range x {
		if rng.IntN(3) == 0 {
			x[i] = edges[rng.IntN(len(edges))]
		} else {
			x[i] = rng.Uint64()
		}
	}
	return x
}

func sameLanes(a, b *State) bool {
	for i := range a {
		if canon(a[i]) != canon(b[i]) {
			return false
		}
	}
	return true
}

// TestSIMDMatchesGo compares every vector routine with its pure-Go twin
// on random, edge and non-canonical lanes, and the whole permutation with
// and without the vector code. Where the CPU has no vector path there is
// nothing to compare: the portable code is then what every other test
// runs (and the purego build tag runs it here).
func TestSIMDMatchesGo(t *testing.T) {
	if !haveSIMD {
		t.Log("no vector code on this CPU or build: the portable path is the tested one")
		return
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for n := 0; n < 20000; n++ {
		x := lazyState(rng)
		var c [64]uint64
		for i := range c {
			c[i] = rng.Uint64N(field.P)
		}
		got, want := x, x
		externalSIMD(&got)
		external(&want)
		if !sameLanes(&got, &want) {
			t.Fatalf("external of %016x: vector %016x, Go %016x", x, got, want)
		}
		got, want = x, x
		fullRoundsSIMD(&got, &c)
		fullRoundsGo(&want, &c)
		if !sameLanes(&got, &want) {
			t.Fatalf("full rounds of %016x: vector %016x, Go %016x", x, got, want)
		}
		a := x[0] | 1
		got, want = x, x
		zGot := projectiveRoundsSIMD(&got, (*[16]uint64)(c[:16]))
		zWant := projectiveRounds(&want, (*[16]uint64)(c[:16]))
		if !sameLanes(&got, &want) || canon(zGot) != canon(zWant) {
			t.Fatalf("partial rounds of %016x: vector %016x / %#x, Go %016x / %#x", x, got, zGot, want, zWant)
		}
		got, want = x, x
		scaledFullRoundsSIMD(&got, &c, a)
		for i := range want {
			want[i] = mul(want[i], a)
		}
		fullRoundsGo(&want, &c)
		if !sameLanes(&got, &want) {
			t.Fatalf("scaled full rounds of %016x by %#x: vector %016x, Go %016x", x, a, got, want)
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

// TestZeroLaneWithoutSIMD runs the zero-lane construction on the portable
// path too.
func TestZeroLaneWithoutSIMD(t *testing.T) {
	withoutSIMD(t, func() { TestPartialRoundZeroLane(t) })
}

// FuzzPermuteTwins compares the permutation with and without the vector
// code and with the reference model, on arbitrary (lazy) lanes.
func FuzzPermuteTwins(f *testing.F) {
	f.Add(make([]byte, 128))
	seed := make([]byte, 128)
	for i := range seed {
		seed[i] = 0xff
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		var s State
		for i := range s {
			var w [8]byte
			copy(w[:], b[min(len(b), 8*i):])
			s[i] = binary.LittleEndian.Uint64(w[:])
		}
		ref := [16]uint64(s)
		refPermute(&ref, &roundConstants)
		got, portable := s, s
		Permute(&got)
		withoutSIMD(t, func() { Permute(&portable) })
		if got != State(ref) || portable != State(ref) {
			t.Fatalf("Permute(%016x): %016x, portable %016x, reference %016x", s, got, portable, ref)
		}
	})
}
