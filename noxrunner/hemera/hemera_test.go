package hemera

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

func iota16() State {
	var s State
	for i := range s {
		s[i] = uint64(i)
	}
	return s
}

func TestExternalMatrix(t *testing.T) {
	x := iota16()
	external(&x)
	for i := range x {
		x[i] = canon(x[i])
	}
	if want := [4]uint64{208, 223, 238, 213}; [4]uint64(x[:4]) != want {
		t.Fatalf("external(0..15)[0:4] = %v, want %v", x[:4], want)
	}
	ref := [16]uint64(iota16())
	refExternal(&ref)
	if x != State(ref) {
		t.Fatalf("external(0..15) = %v, reference %v", x, ref)
	}
}

func TestPermuteVectors(t *testing.T) {
	cases := []struct {
		name string
		in   State
		want [4]uint64
	}{
		{"zero", State{}, [4]uint64{0xf3fe057df4c341a1, 0xf8334a1ef9887195, 0x8e1e0ce64e5d20ad, 0x291dc6bf9addc565}},
		{"iota", iota16(), [4]uint64{0x446cdbec7fe80211, 0x1dece38f4ccafb02, 0xed7466df4db1e166, 0xf9fe02d996bc72e3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.in
			Permute(&s)
			if [4]uint64(s[:4]) != c.want {
				t.Errorf("Permute = %016x, want %016x", s[:4], c.want)
			}
			ref := [16]uint64(c.in)
			refPermute(&ref, &roundConstants)
			if s != State(ref) {
				t.Errorf("Permute = %016x, reference %016x", s, ref)
			}
		})
	}
}

// TestPermuteMatchesReference checks the lazy-reduction permutation against
// the literal transcription on random and edge states, including
// non-canonical input lanes (read mod p).
func TestPermuteMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	edges := []uint64{0, 1, field.P - 1, field.P, field.P + 1, 1<<64 - 1, eps, 1 << 63}
	for n := 0; n < 2000; n++ {
		var s State
		for i := range s {
			switch rng.IntN(4) {
			case 0:
				s[i] = edges[rng.IntN(len(edges))]
			case 1:
				s[i] = rng.Uint64N(16)
			default:
				s[i] = rng.Uint64()
			}
		}
		ref := [16]uint64(s)
		refPermute(&ref, &roundConstants)
		got := s
		Permute(&got)
		if got != State(ref) {
			t.Fatalf("Permute(%016x) = %016x, reference %016x", s, got, ref)
		}
		for i := range got {
			if got[i] >= field.P {
				t.Fatalf("Permute output lane %d not canonical: %#x", i, got[i])
			}
		}
	}
}

func mustHex(t *testing.T, s string) [32]byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		t.Fatalf("bad hex %q", s)
	}
	return [32]byte(b)
}

func TestHashVectors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "a67a71b221e6bdd6442a20432bf5d74c885d89e5dfbeec3ec4e334cb806d563c"},
		{"hello", "e1b19b8235443e9fac8f1d6a1203de66e9a58c53e36cbbc1f71a031c3d13ce77"},
		{"hemera", "94341ea38ac105378d9e8ce04ac889fdbcb952c7877d9ab9225ecc022b66c82a"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.in), func(t *testing.T) {
			d := Hash([]byte(c.in))
			if d.String() != c.want {
				t.Errorf("Hash = %s, want %s", d, c.want)
			}
			if d.Bytes() != mustHex(t, c.want) {
				t.Errorf("Bytes disagrees with String")
			}
		})
	}
}

func refHash(data []byte) Digest {
	s := refSponge(data, &roundConstants)
	return Digest(s[:4])
}

// TestHashBlockBoundaries covers inputs around the 56-byte block: the final
// padded block is always absorbed, so 56 and 112 bytes take an extra
// permutation, and the length lane separates otherwise equal paddings.
func TestHashBlockBoundaries(t *testing.T) {
	seen := map[Digest]int{}
	for _, n := range []int{0, 1, 7, 8, 55, 56, 57, 111, 112, 113} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*7 + 3)
		}
		d := Hash(data)
		if prev, ok := seen[d]; ok {
			t.Errorf("Hash of %d bytes equals Hash of %d bytes", n, prev)
		}
		seen[d] = n
		if want := refHash(data); d != want {
			t.Errorf("Hash(%d bytes) = %s, reference %s", n, d, want)
		}
	}
}

func TestHashMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 300; n++ {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if n%5 == 0 {
			for i := range data {
				data[i] = 0xff
			}
		}
		if got, want := Hash(data), refHash(data); got != want {
			t.Fatalf("Hash(%d bytes) = %s, reference %s", n, got, want)
		}
	}
}

// TestTreeVectorFragments: the tree vectors of §3.8 are only given as
// prefix…suffix, but a single-chunk root is HashLeaf(data, 0, true), so the
// fragments still pin the leaf flags and, for 4096 zero bytes, multi-block
// absorption with the length lane overwritten at finalisation.
func TestTreeVectorFragments(t *testing.T) {
	cases := []struct {
		name           string
		in             []byte
		prefix, suffix string
	}{
		{"empty", nil, "ea57b2e6", "8552"},
		{"hello", []byte("hello"), "626fa46e", "80d7"},
		{"4k_zeros", make([]byte, 4096), "66a2b0f7", "ccf0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := HashLeaf(c.in, 0, true).String()
			if got[:8] != c.prefix || got[60:] != c.suffix {
				t.Errorf("HashLeaf(root) = %s, want %s…%s", got, c.prefix, c.suffix)
			}
		})
	}
}

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestParticleVectors(t *testing.T) {
	a := AtomDigest
	pr := PairDigest
	cases := []struct {
		name string
		d    Digest
		want string
	}{
		{"0", a(0), "47ff2df1749c1a6c30bba58202ddb7dacacdf95db5f2abacff8fcb81202f7702"},
		{"1", a(1), "8f8df9b8a6c64fe5cfd103c4d8564d92d22e5d62a6edc44301e1aa260d387abe"},
		{"42", a(42), "e1541bed2ef9ae8d2073bbf1d590defeb32aba3fc8b1281d1efbeb4e2c6b84a6"},
		{"p-1", a(field.P - 1), "4fcd81ffed89560e3a282be07e69be883ef9bcd16ad366d2d65f8b98deca6112"},
		{"[0 1]", pr(a(0), a(1)), "2b6422629a6cdac80b768121ba89a60b08d5b9c60d45513f4e782f2290860b20"},
		{"[1 2]", pr(a(1), a(2)), "c2e17f0c787ac64d4a96c84ad57996e5cf56b02e2247575100ce81c09d12a9a0"},
		{"[5 [[0 2] [0 3]]]", pr(a(5), pr(pr(a(0), a(2)), pr(a(0), a(3)))),
			"0b747803afb9d67f2d952c1b393c53a557ec111892d32bbb3375c339fc0e9a8c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.d.String() != c.want {
				t.Errorf("particle = %s, want %s", c.d, c.want)
			}
		})
	}
	want0 := Digest{7789710531567157063, 15760308423857912624, 12442305256320781770, 177662526967484415}
	if a(0) != want0 {
		t.Errorf("digest(0) limbs = %v, want %v", a(0), want0)
	}
}

// TestAtomDigestIsLeaf checks the unrolled atom path against the general
// HashLeaf definition, and that atoms are identified by canonical value.
func TestAtomDigestIsLeaf(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	vals := []uint64{0, 1, 0xff, 1 << 55, 1<<56 - 1, 1 << 56, 1 << 63, field.P - 1}
	for i := 0; i < 100; i++ {
		vals = append(vals, rng.Uint64N(field.P))
	}
	for _, v := range vals {
		if got, want := AtomDigest(v), HashLeaf(le64(v), 0, false); got != want {
			t.Fatalf("AtomDigest(%d) = %s, HashLeaf %s", v, got, want)
		}
	}
	for _, v := range []uint64{0, 1, eps - 2} { // v+p must not wrap
		if AtomDigest(v+field.P) != AtomDigest(v) {
			t.Errorf("AtomDigest(%d+p) != AtomDigest(%d)", v, v)
		}
	}
}

func TestTreePrimitives(t *testing.T) {
	l, r := AtomDigest(1), AtomDigest(2)

	var s State
	copy(s[0:4], l[:])
	copy(s[4:8], r[:])
	s[9] = 2
	Permute(&s)
	if got := HashNode(l, r, false); got != Digest(s[:4]) {
		t.Errorf("HashNode = %s, want %x", got, s[:4])
	}
	if PairDigest(l, r) != HashNode(l, r, false) {
		t.Error("PairDigest != HashNode(…, false)")
	}
	if HashNode(l, r, true) == HashNode(l, r, false) {
		t.Error("ROOT flag has no effect on HashNode")
	}
	if HashNode(l, r, false) == HashNode(r, l, false) {
		t.Error("HashNode is symmetric")
	}

	h := Hash([]byte("chunk"))
	s = State{}
	copy(s[0:4], h[:])
	s[8], s[9] = 3, 4|1
	Permute(&s)
	if got := HashLeaf([]byte("chunk"), 3, true); got != Digest(s[:4]) {
		t.Errorf("HashLeaf = %s, want %x", got, s[:4])
	}
	if HashLeaf([]byte("chunk"), 3, true) == HashLeaf([]byte("chunk"), 4, true) {
		t.Error("counter has no effect on HashLeaf")
	}
}

func TestHashData(t *testing.T) {
	d := AtomDigest(7)
	s := [16]uint64{d[0], d[1], d[2], d[3]}
	refPermute(&s, &roundConstants)
	if got := HashData(d); got != Digest(s[:4]) {
		t.Errorf("HashData = %s, want %x", got, s[:4])
	}
	db := d.Bytes()
	if HashData(d) == d || HashData(d) == HashLeaf(db[:], 0, false) {
		t.Error("HashData coincides with an identity form")
	}
}

func TestDigestBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 100; i++ {
		d := AtomDigest(rng.Uint64N(field.P))
		if DigestFromBytes(d.Bytes()) != d {
			t.Fatalf("round trip failed for %s", d)
		}
	}
	d := Digest{1, 2, field.P - 1, 0x0123456789abcdef}
	if got, want := d.String(), "01000000000000000200000000000000"+"00000000ffffffff"+"efcdab8967452301"; got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
	// Non-canonical limbs are reduced on read, as the reference does.
	var b [32]byte
	binary.LittleEndian.PutUint64(b[0:], field.P)
	binary.LittleEndian.PutUint64(b[8:], 1<<64-1)
	binary.LittleEndian.PutUint64(b[16:], field.P-1)
	binary.LittleEndian.PutUint64(b[24:], field.P+5)
	if got, want := DigestFromBytes(b), (Digest{0, 4294967294, field.P - 1, 5}); got != want {
		t.Errorf("DigestFromBytes = %v, want %v", got, want)
	}
}

var sink, sink2 Digest

func TestZeroAllocs(t *testing.T) {
	l, r := AtomDigest(1), AtomDigest(2)
	var s, s2 State
	chunk := make([]byte, 200)
	cases := []struct {
		name string
		f    func()
	}{
		{"Permute", func() { Permute(&s) }},
		{"AtomDigest", func() { sink = AtomDigest(42) }},
		{"PairDigest", func() { sink = PairDigest(l, r) }},
		{"HashData", func() { sink = HashData(l) }},
		{"HashNode", func() { sink = HashNode(l, r, true) }},
		{"Hash", func() { sink = Hash(chunk) }},
		{"HashLeaf", func() { sink = HashLeaf(chunk, 1, false) }},
		{"DigestFromBytes", func() { sink = DigestFromBytes(l.Bytes()) }},
		{"Permute2", func() { Permute2(&s, &s2) }},
		{"AtomDigest2", func() { sink, sink2 = AtomDigest2(1<<40, 1<<41) }},
		{"PairDigest2", func() { sink, sink2 = PairDigest2(l, r, r, l) }},
		{"HashData2", func() { sink, sink2 = HashData2(l, r) }},
	}
	for _, c := range cases {
		if n := testing.AllocsPerRun(100, c.f); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", c.name, n)
		}
	}
}

// TestSmallAtomDigests: a remembered digest is the computed one, whoever
// computed it first, including concurrent first uses.
func TestSmallAtomDigests(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := uint64(0); v < smallAtoms+2; v++ {
				if got, want := AtomDigest(v), HashLeaf(le64(v), 0, false); got != want {
					t.Errorf("AtomDigest(%d) = %s, HashLeaf %s", v, got, want)
				}
			}
		}()
	}
	wg.Wait()
	if AtomDigest(field.P+3) != HashLeaf(le64(3), 0, false) {
		t.Error("AtomDigest(p+3) is not the digest of 3")
	}
}
