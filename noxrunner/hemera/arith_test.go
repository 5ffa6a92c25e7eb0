package hemera

import (
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
		if got, want := canon(pow7(a)), field.Pow7(ca); got != want {
			t.Fatalf("pow7(%#x) = %#x, want %#x", a, got, want)
		}
		if got, want := canon(inv(a)), field.Inv(ca); got != want {
			t.Fatalf("inv(%#x) = %#x, want %#x", a, got, want)
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

func TestInvOfZeroIsZero(t *testing.T) {
	for _, z := range []uint64{0, field.P} {
		if got := canon(inv(z)); got != 0 {
			t.Fatalf("inv(%#x) = %#x, want 0", z, got)
		}
	}
}

func TestInvIsInverse(t *testing.T) {
	for _, a := range lazyInputs(200) {
		if field.Reduce(a) == 0 {
			continue
		}
		if got := field.Mul(canon(inv(a)), field.Reduce(a)); got != 1 {
			t.Fatalf("a·inv(a) = %d for a = %#x", got, a)
		}
	}
}
