package hemera

import (
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/sidebyside"
)

// The side-by-side benchmarks run the previous implementation (v1_test.go)
// and the current one alternately in one binary and report ns/op (new),
// old-ns/op and x-old; see docs/hemera.md for the figures.

// BenchmarkPermute is one permutation, each output feeding the next input
// (a hash chain), so it is the latency a caller waits for.
func BenchmarkPermute(b *testing.B) {
	sOld, sNew := iota16(), iota16()
	sidebyside.Compare(b, func(n int) {
		for range n {
			permuteV1(&sOld, &roundConstants)
		}
	}, func(n int) {
		for range n {
			Permute(&sNew)
		}
	})
	if sOld != sNew {
		b.Fatal("the two permutations disagree")
	}
}

// BenchmarkPermutePortable is the portable path (old side: the pure-Go
// twins, as without AVX-512 or with the purego tag) against the vector
// code (new side). Without vector code both sides are the portable path.
func BenchmarkPermutePortable(b *testing.B) {
	sGo, sVec := iota16(), iota16()
	saved := haveSIMD
	defer func() { haveSIMD = saved }()
	sidebyside.Compare(b, func(n int) {
		haveSIMD = false
		for range n {
			Permute(&sGo)
		}
		haveSIMD = saved
	}, func(n int) {
		for range n {
			Permute(&sVec)
		}
	})
	if sGo != sVec {
		b.Fatal("the two paths disagree")
	}
}

// BenchmarkPartialRounds is the 16 partial rounds alone (projective with
// one inversion, against 16 Fermat inversions).
func BenchmarkPartialRounds(b *testing.B) {
	sOld, sNew := iota16(), iota16()
	sidebyside.Compare(b, func(n int) {
		for range n {
			partialRoundsV1(&sOld, (*[16]uint64)(roundConstants[128:]))
		}
	}, func(n int) {
		for range n {
			partialRounds(&sNew, (*[16]uint64)(roundConstants[128:]))
		}
	})
}

// BenchmarkFullRound is one full round: constants, x^7 on 16 lanes, the
// external matrix.
func BenchmarkFullRound(b *testing.B) {
	sOld, sNew := iota16(), iota16()
	sidebyside.Compare(b, func(n int) {
		for range n {
			fullRoundV1(&sOld, (*[Width]uint64)(roundConstants[:]))
		}
	}, func(n int) {
		for range n {
			fullRound(&sNew, (*[Width]uint64)(roundConstants[:]))
		}
	})
}

// BenchmarkExternal is the external matrix alone.
func BenchmarkExternal(b *testing.B) {
	sOld, sNew := iota16(), iota16()
	sidebyside.Compare(b, func(n int) {
		for range n {
			externalV1(&sOld)
		}
	}, func(n int) {
		for range n {
			external(&sNew)
		}
	})
}

// The digest benchmarks have no old side (they call Permute); their ratio
// follows BenchmarkPermute's.

func BenchmarkAtomDigest(b *testing.B) {
	b.ReportAllocs()
	v := uint64(smallAtoms) // above the remembered small atoms
	for b.Loop() {
		sink = AtomDigest(v)
		v++
	}
}

func BenchmarkPairDigest(b *testing.B) {
	l, r := AtomDigest(1), AtomDigest(2)
	b.ReportAllocs()
	for b.Loop() {
		l = PairDigest(l, r)
	}
	sink = l
}

func BenchmarkHashData(b *testing.B) {
	d := AtomDigest(7)
	b.ReportAllocs()
	for b.Loop() {
		d = HashData(d)
	}
	sink = d
}

func BenchmarkHash1K(b *testing.B) {
	data := make([]byte, 1024)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		sink = Hash(data)
	}
}
