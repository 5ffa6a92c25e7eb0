package noun

import (
	"strconv"
	"testing"
)

// list10k is a right-nested list of 5,000 distinct atoms: 10,000 nodes
// (5,000 pairs, 5,000 atoms) plus the final atom, all distinct.
func list10k() Noun {
	n := Atom(5000)
	for i := 4999; i >= 0; i-- {
		n = Cons(Atom(uint64(i)), n)
	}
	return n
}

// BenchmarkParticle10k is the particle of a fresh 10,000-node noun: every
// pair costs one permutation and every atom two (a leaf is a sponge
// absorb plus the leaf permutation).
func BenchmarkParticle10k(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		n := list10k()
		b.StartTimer()
		_ = n.Particle()
	}
}

// BenchmarkParticleCached is the same noun once its digests are cached.
func BenchmarkParticleCached(b *testing.B) {
	n := list10k()
	_ = n.Particle()
	for b.Loop() {
		_ = n.Particle()
	}
}

// BenchmarkParse reads the same 10,000-node list written n-ary, as
// "[0 1 2 … 5000]" (one bracket, folded to the right).
func BenchmarkParse(b *testing.B) {
	buf := []byte("[0")
	for i := 1; i <= 5000; i++ {
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, int64(i), 10)
	}
	src := string(append(buf, ']'))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}
