package hemera

import (
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/sidebyside"
)

// The side-by-side benchmarks run the previous implementation (v1_test.go)
// and the current one alternately in one binary and report ns/op (new),
// old-ns/op and x-old; see docs/hashing.md for the figures.

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

// BenchmarkPermute2 is two independent permutations: Permute on each
// (old side) against Permute2 (new side). An op is the pair; per state
// is half of it.
func BenchmarkPermute2(b *testing.B) {
	a1, b1 := iota16(), State{}
	a2, b2 := a1, b1
	sidebyside.Compare(b, func(n int) {
		for range n {
			Permute(&a1)
			Permute(&b1)
		}
	}, func(n int) {
		for range n {
			Permute2(&a2, &b2)
		}
	})
	if a1 != a2 || b1 != b2 {
		b.Fatal("Permute2 disagrees with Permute")
	}
}

// BenchmarkPermute2Stages is each stage of Permute2 on the vector path
// against the same stage run on one state, then the other: which of them
// gains from running two states side by side.
func BenchmarkPermute2Stages(b *testing.B) {
	if !haveSIMD {
		b.Skip("no vector code on this CPU or build")
	}
	rc := &roundConstants
	full, partial := (*[64]uint64)(rc[0:64]), (*[16]uint64)(rc[128:])
	b.Run("full-rounds", func(b *testing.B) {
		x, y := iota16(), State{}
		sidebyside.Compare(b, func(n int) {
			for range n {
				fullRoundsSIMD(&x, full)
				fullRoundsSIMD(&y, full)
			}
		}, func(n int) {
			for range n {
				fullRounds2SIMD(&x, &y, full)
			}
		})
	})
	b.Run("partial-rounds", func(b *testing.B) {
		x, y := iota16(), State{}
		sidebyside.Compare(b, func(n int) {
			for range n {
				x[0] ^= projectiveRoundsSIMD(&x, partial)
				y[0] ^= projectiveRoundsSIMD(&y, partial)
			}
		}, func(n int) {
			for range n {
				zx, zy := projectiveRounds2SIMD(&x, &y, partial)
				x[0] ^= zx
				y[0] ^= zy
			}
		})
	})
}
