package hemera

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// lazyEdges are inputs that stress the carry and borrow corrections,
// including non-canonical representatives in [p, 2^64).
var lazyEdges = []uint64{
	0, 1, 2, eps - 1, eps, eps + 1, 1 << 32, 1<<63 - 1, 1 << 63,
	field.P - 2, field.P - 1, field.P, field.P + 1, 1<<64 - 2, 1<<64 - 1,
}

var bigP = new(big.Int).SetUint64(field.P)

func lazyInputs(n int) []uint64 {
	rng := rand.New(rand.NewPCG(1, 2))
	out := append([]uint64(nil), lazyEdges...)
	for i := 0; i < n; i++ {
		switch i % 3 {
		case 0:
			out = append(out, rng.Uint64())
		case 1:
			out = append(out, field.P+rng.Uint64N(1<<32-1)) // non-canonical
		default:
			out = append(out, rng.Uint64N(1<<40))
		}
	}
	return out
}

func TestLazyArithmetic(t *testing.T) {
	in := lazyInputs(300)
	for _, a := range in {
		ca := field.Reduce(a)
		if isZero(a) != (ca == 0) {
			t.Fatalf("isZero(%#x) = %v", a, isZero(a))
		}
		for _, b := range in {
			cb := field.Reduce(b)
			if got, want := canon(mul(a, b)), field.Mul(ca, cb); got != want {
				t.Fatalf("mul(%#x, %#x) = %#x, want %#x", a, b, got, want)
			}
			if got, want := canon(mulAdd(a, b, b)), field.Add(field.Mul(ca, cb), cb); got != want {
				t.Fatalf("mulAdd(%#x, %#x, %#x) = %#x, want %#x", a, b, b, got, want)
			}
			if got, want := canon(addC(a, cb)), field.Add(ca, cb); got != want {
				t.Fatalf("addC(%#x, %#x) = %#x, want %#x", a, cb, got, want)
			}
			// redSmall is only fed hi < 35 by the linear layers.
			hi := b % 35
			want := field.Add(field.Mul(hi, eps), ca)
			if got := canon(redSmall(hi, a)); got != want {
				t.Fatalf("redSmall(%d, %#x) = %#x, want %#x", hi, a, got, want)
			}
		}
	}
}

func TestRedFull128(t *testing.T) {
	// red must accept every 128-bit input, including high words no product
	// of two words can produce, and hit each carry/borrow combination.
	his := []uint64{0, 1, eps, 1 << 32, eps << 32, 1<<64 - 2, 1<<64 - 1, 0x00000001FFFFFFFF, 0xFFFFFFFF00000000}
	los := []uint64{0, 1, eps, 1 << 32, field.P - 1, field.P, 1<<64 - 1}
	rng := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 200; i++ {
		his = append(his, rng.Uint64())
		los = append(los, rng.Uint64())
	}
	for _, hi := range his {
		for _, lo := range los {
			x := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
			x.Add(x, new(big.Int).SetUint64(lo))
			want := x.Mod(x, bigP).Uint64()
			if got := canon(red(hi, lo)); got != want {
				t.Fatalf("red(%#x, %#x) = %#x, want %#x", hi, lo, got, want)
			}
		}
	}
}

func TestExternalLazyInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for n := 0; n < 500; n++ {
		var x State
		for i := range x {
			if n == 0 || rng.IntN(3) == 0 {
				x[i] = 1<<64 - 1 // drives the exact sums to their maximum
			} else {
				x[i] = rng.Uint64()
			}
		}
		var ref [16]uint64
		for i := range x {
			ref[i] = field.Reduce(x[i])
		}
		refExternal(&ref)
		external(&x)
		for i := range x {
			if canon(x[i]) != ref[i] {
				t.Fatalf("external lane %d = %#x, reference %#x", i, canon(x[i]), ref[i])
			}
		}
	}
}
