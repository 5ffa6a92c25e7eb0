package hemera

import "testing"

func BenchmarkPermute(b *testing.B) {
	s := iota16()
	b.ReportAllocs()
	for b.Loop() {
		Permute(&s)
	}
}

func BenchmarkAtomDigest(b *testing.B) {
	b.ReportAllocs()
	var v uint64
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

func BenchmarkHash1K(b *testing.B) {
	data := make([]byte, 1024)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		sink = Hash(data)
	}
}

// Component benchmarks, for locating time inside Permute. The partial rounds
// are bounded below by 16 inversions run back to back (BenchmarkInv × 16).

var wordSink uint64

func BenchmarkInv(b *testing.B) {
	x := uint64(12345)
	for b.Loop() {
		x = inv(x) + 1
	}
	wordSink = x
}

func BenchmarkFullRound(b *testing.B) {
	s := iota16()
	for b.Loop() {
		fullRound(&s, (*[Width]uint64)(roundConstants[:]))
	}
}

func BenchmarkPartialRounds(b *testing.B) {
	s := iota16()
	for b.Loop() {
		partialRounds(&s, (*[16]uint64)(roundConstants[128:]))
	}
}

func BenchmarkExternal(b *testing.B) {
	s := iota16()
	for b.Loop() {
		external(&s)
	}
}
