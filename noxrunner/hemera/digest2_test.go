package hemera

import (
	"math/rand/v2"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// TestDigest2 holds AtomDigest2, PairDigest2 and HashData2 to their
// one-digest functions, on the vector and the portable path; atoms
// include remembered small ones, values at and above p (read mod p) and
// pairs where only one of the two is small.
func TestDigest2(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(51, 52))
		atoms := []uint64{0, 1, smallAtoms - 1, smallAtoms, field.P - 1, field.P, field.P + smallAtoms, 1<<64 - 1}
		for range 200 {
			atoms = append(atoms, rng.Uint64())
		}
		for i, v := range atoms {
			w := atoms[(i*5+3)%len(atoms)]
			gv, gw := AtomDigest2(v, w)
			if gv != AtomDigest(v) || gw != AtomDigest(w) {
				t.Fatalf("AtomDigest2(%#x, %#x) = %v, %v; want %v, %v", v, w, gv, gw, AtomDigest(v), AtomDigest(w))
			}
			l1, r1, l2, r2 := AtomDigest(v), AtomDigest(w), AtomDigest(v+1), AtomDigest(w^7)
			p1, p2 := PairDigest2(l1, r1, l2, r2)
			if p1 != PairDigest(l1, r1) || p2 != PairDigest(l2, r2) {
				t.Fatalf("PairDigest2 of %v %v, %v %v = %v, %v", l1, r1, l2, r2, p1, p2)
			}
			h1, h2 := HashData2(p1, l2)
			if h1 != HashData(p1) || h2 != HashData(l2) {
				t.Fatalf("HashData2(%v, %v) = %v, %v", p1, l2, h1, h2)
			}
		}
	})
}
