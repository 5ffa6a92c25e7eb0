package field

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

var bigP = new(big.Int).SetUint64(P)

func refMul(a, b uint64) uint64 {
	x := new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b))
	return x.Mod(x, bigP).Uint64()
}

func refAdd(a, b uint64) uint64 {
	x := new(big.Int).Add(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b))
	return x.Mod(x, bigP).Uint64()
}

func refSub(a, b uint64) uint64 {
	x := new(big.Int).Sub(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b))
	return x.Mod(x, bigP).Uint64()
}

var edges = []uint64{0, 1, 2, 3, epsilon - 1, epsilon, epsilon + 1, 1 << 32, 1 << 63, P - 2, P - 1}

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

func TestEdgesAgainstBigInt(t *testing.T) {
	for _, a := range edges {
		for _, b := range edges {
			if got, want := Add(a, b), refAdd(a, b); got != want {
				t.Errorf("Add(%d,%d)=%d want %d", a, b, got, want)
			}
			if got, want := Sub(a, b), refSub(a, b); got != want {
				t.Errorf("Sub(%d,%d)=%d want %d", a, b, got, want)
			}
			if got, want := Mul(a, b), refMul(a, b); got != want {
				t.Errorf("Mul(%d,%d)=%d want %d", a, b, got, want)
			}
		}
		if a != 0 && Mul(a, Inv(a)) != 1 {
			t.Errorf("a·inv(a) != 1 for %d", a)
		}
	}
}

func TestRandomAgainstBigInt(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		a, b := Reduce(r.Uint64()), Reduce(r.Uint64())
		if Add(a, b) != refAdd(a, b) || Sub(a, b) != refSub(a, b) || Mul(a, b) != refMul(a, b) {
			t.Fatalf("mismatch for %d, %d", a, b)
		}
		if Neg(a) != refSub(0, a) {
			t.Fatalf("Neg mismatch for %d", a)
		}
	}
}

func BenchmarkMul(b *testing.B) {
	x, y := uint64(0x123456789ABCDEF0), uint64(0x0FEDCBA987654321)
	for b.Loop() {
		x = Mul(x, y)
	}
	_ = x
}

func BenchmarkInv(b *testing.B) {
	x := uint64(0x123456789ABCDEF0)
	for b.Loop() {
		x = Inv(x) + 1
	}
	_ = x
}
