package field

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

var bigP = new(big.Int).SetUint64(P)

func big64(x uint64) *big.Int { return new(big.Int).SetUint64(x) }

func refMul(a, b uint64) uint64 {
	x := new(big.Int).Mul(big64(a), big64(b))
	return x.Mod(x, bigP).Uint64()
}

func refAdd(a, b uint64) uint64 {
	x := new(big.Int).Add(big64(a), big64(b))
	return x.Mod(x, bigP).Uint64()
}

func refSub(a, b uint64) uint64 {
	x := new(big.Int).Sub(big64(a), big64(b))
	return x.Mod(x, bigP).Uint64()
}

func refInv(a uint64) uint64 {
	if a%P == 0 {
		return 0
	}
	return new(big.Int).ModInverse(big64(a), bigP).Uint64()
}

// edges are the values around every boundary the reductions care about:
// the ends of the field, ε = 2^32 − 1 and its neighbours, powers of two
// (whose inverses are the longest and shortest GCD runs), and values whose
// halves are all ones or all zeros.
var edges = []uint64{
	0, 1, 2, 3, 4, epsilon - 1, epsilon, epsilon + 1, 1 << 32, 1<<32 + 1,
	1 << 33, 1<<63 - 1, 1 << 63, 1<<63 + 1, P - epsilon - 1, P - epsilon,
	P - 1<<32, P - 3, P - 2, P - 1, 0xFFFFFFFE_FFFFFFFF, 0x00000001_FFFFFFFF,
	0xAAAAAAAA_AAAAAAAA, 0x55555555_55555555, 1<<48 + 1,
}

func TestSpecValues(t *testing.T) {
	cases := []struct {
		name      string
		got, want uint64
	}{
		{"inv(2)", Inv(2), 9223372034707292161},
		{"(p-1)^2", Mul(P-1, P-1), 1},
		{"0-1", Sub(0, 1), 18446744069414584320},
		{"reduce(2^64-1)", Reduce(^uint64(0)), 4294967294},
		{"mul", Mul(0x12345678, 0x9ABCDEF0), 0x0B00EA4E242D2080},
		{"pow7", Pow7(0x123456789ABCDEF0), 0xA480968CDE68DB72},
		{"inv(0)", Inv(0), 0},
		{"root of unity", Pow(1753635133440165772, 1<<32), 1},
		{"reduce(p)", Reduce(P), 0},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if Pow(1753635133440165772, 1<<31) == 1 {
		t.Error("2^32-th root of unity has a smaller order")
	}
}

// check compares every operation on (a, b) with math/big and with the
// previous implementation.
func check(t *testing.T, a, b uint64) {
	t.Helper()
	if got, want := Add(a, b), refAdd(a, b); got != want || addV1(a, b) != want {
		t.Fatalf("Add(%#x, %#x) = %#x, want %#x", a, b, got, want)
	}
	if got, want := Sub(a, b), refSub(a, b); got != want || subV1(a, b) != want {
		t.Fatalf("Sub(%#x, %#x) = %#x, want %#x", a, b, got, want)
	}
	if got, want := Mul(a, b), refMul(a, b); got != want || mulV1(a, b) != want {
		t.Fatalf("Mul(%#x, %#x) = %#x, want %#x", a, b, got, want)
	}
	if got, want := Neg(a), refSub(0, a); got != want {
		t.Fatalf("Neg(%#x) = %#x, want %#x", a, got, want)
	}
	if got, want := Inv(a), refInv(a); got != want {
		t.Fatalf("Inv(%#x) = %#x, want %#x", a, got, want)
	}
}

func TestEdgesAgainstBigInt(t *testing.T) {
	for _, a := range edges {
		for _, b := range edges {
			check(t, a, b)
		}
		if got, want := Inv(a), invV1(a); got != want {
			t.Fatalf("Inv(%#x) = %#x, Fermat gives %#x", a, got, want)
		}
	}
}

func TestRandomAgainstBigInt(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 200000
	if testing.Short() {
		n = 20000
	}
	for range n {
		check(t, r.Uint64N(P), r.Uint64N(P))
	}
}

// TestInvPowersOfTwo covers the GCD's extremes: 2^k is all shift, and its
// negation and neighbours run long.
func TestInvPowersOfTwo(t *testing.T) {
	for k := 0; k < 64; k++ {
		for _, v := range []uint64{1 << k, P - 1<<k, 1<<k + 1, 1<<k - 1} {
			if v >= P {
				continue
			}
			if got, want := Inv(v), refInv(v); got != want {
				t.Fatalf("Inv(%#x) = %#x, want %#x", v, got, want)
			}
		}
	}
}

func TestReduceAllBoundaries(t *testing.T) {
	for _, x := range []uint64{0, 1, P - 1, P, P + 1, 1<<64 - 2, 1<<64 - 1} {
		if got, want := Reduce(x), x%P; got != want {
			t.Fatalf("Reduce(%#x) = %#x, want %#x", x, got, want)
		}
	}
}

// TestFoldFull128 checks the inner reduction on every 128-bit shape,
// including high words no product of canonical values can produce.
func TestFoldFull128(t *testing.T) {
	his := []uint64{0, 1, epsilon, 1 << 32, epsilon << 32, 1<<64 - 2, 1<<64 - 1, 0x00000001FFFFFFFF, 0xFFFFFFFF00000000}
	los := []uint64{0, 1, epsilon, 1 << 32, P - 1, P, 1<<64 - 1}
	rng := rand.New(rand.NewPCG(11, 12))
	for range 200 {
		his = append(his, rng.Uint64())
		los = append(los, rng.Uint64())
	}
	for _, hi := range his {
		for _, lo := range los {
			x := new(big.Int).Lsh(big64(hi), 64)
			x.Add(x, big64(lo))
			want := x.Mod(x, bigP).Uint64()
			if got := Reduce(fold(hi, lo)); got != want {
				t.Fatalf("fold(%#x, %#x) = %#x, want %#x", hi, lo, got, want)
			}
		}
	}
}

func TestNoAllocations(t *testing.T) {
	a, b := uint64(0x123456789ABCDEF0), uint64(0x0FEDCBA987654321)
	if n := testing.AllocsPerRun(100, func() {
		a = Mul(a, b) + Inv(a) + Add(a, b) + Sub(a, b)
		a = Reduce(a)
	}); n != 0 {
		t.Fatalf("%v allocations per run", n)
	}
}

// FuzzArith compares every operation with math/big on arbitrary canonical
// operands (inputs are reduced first, as callers must).
func FuzzArith(f *testing.F) {
	for _, a := range edges {
		f.Add(a, P-1-a)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		a, b = a%P, b%P
		check(t, a, b)
		if inv := Inv(a); a != 0 && Mul(a, inv) != 1 {
			t.Fatalf("a·Inv(a) != 1 for %#x", a)
		}
		if a != 0 {
			c1, k1 := gcdStepsFast(a)
			c2, k2 := gcdSteps(a)
			if c1 != c2 || k1 != k2 {
				t.Fatalf("gcd steps of %#x: fast (%#x, %d), Go (%#x, %d)", a, c1, k1, c2, k2)
			}
		}
	})
}

// TestGCDStepsTwins compares the assembly GCD loop with the Go one.
func TestGCDStepsTwins(t *testing.T) {
	if !haveBMI {
		t.Log("no assembly GCD on this CPU or build: the Go loop is the tested one")
		return
	}
	r := rand.New(rand.NewPCG(5, 6))
	vals := append([]uint64(nil), edges[1:]...)
	for k := 0; k < 64; k++ {
		vals = append(vals, 1<<k%P, P-1<<k%P)
	}
	for range 100000 {
		vals = append(vals, r.Uint64N(P-1)+1)
	}
	for _, a := range vals {
		if a == 0 || a >= P {
			continue
		}
		c1, k1 := gcdStepsFast(a)
		c2, k2 := gcdSteps(a)
		if c1 != c2 || k1 != k2 {
			t.Fatalf("gcd steps of %#x: assembly (%#x, %d), Go (%#x, %d)", a, c1, k1, c2, k2)
		}
	}
}
