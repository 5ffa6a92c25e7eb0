package field

import (
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/sidebyside"
)

// The loops below are written out once per implementation: passing the
// operation as a function value would stop it being inlined and measure a
// call instead.

var sink uint64

const x0, y0 = 0x123456789ABCDEF0, 0x0FEDCBA987654321

// BenchmarkMul is the latency of one multiplication: each product feeds
// the next, as in an exponentiation.
func BenchmarkMul(b *testing.B) {
	sidebyside.Compare(b, func(n int) {
		x := uint64(x0)
		for range n {
			x = mulV1(x, y0)
		}
		sink += x
	}, func(n int) {
		x := uint64(x0)
		for range n {
			x = Mul(x, y0)
		}
		sink += x
	})
}

// BenchmarkMulThroughput is the cost of one multiplication among
// independent ones (eight interleaved chains), as in a hash's full round
// or an NTT layer. ns/op is per multiplication.
func BenchmarkMulThroughput(b *testing.B) {
	sidebyside.Compare(b, func(n int) {
		a, c, d, e, f, g, h, k := uint64(1), uint64(2), uint64(3), uint64(4), uint64(5), uint64(6), uint64(7), uint64(8)
		for i := 0; i < n; i += 8 {
			a, c, d, e = mulV1(a, y0), mulV1(c, y0), mulV1(d, y0), mulV1(e, y0)
			f, g, h, k = mulV1(f, y0), mulV1(g, y0), mulV1(h, y0), mulV1(k, y0)
		}
		sink += a ^ c ^ d ^ e ^ f ^ g ^ h ^ k
	}, func(n int) {
		a, c, d, e, f, g, h, k := uint64(1), uint64(2), uint64(3), uint64(4), uint64(5), uint64(6), uint64(7), uint64(8)
		for i := 0; i < n; i += 8 {
			a, c, d, e = Mul(a, y0), Mul(c, y0), Mul(d, y0), Mul(e, y0)
			f, g, h, k = Mul(f, y0), Mul(g, y0), Mul(h, y0), Mul(k, y0)
		}
		sink += a ^ c ^ d ^ e ^ f ^ g ^ h ^ k
	})
}

// BenchmarkInv is the latency of one inversion; each result feeds the next
// input, so the GCD's data-dependent length averages over varied inputs.
func BenchmarkInv(b *testing.B) {
	sidebyside.Compare(b, func(n int) {
		x := uint64(x0)
		for range n {
			x = Add(invV1(x), 1)
		}
		sink += x
	}, func(n int) {
		x := uint64(x0)
		for range n {
			x = Add(Inv(x), 1)
		}
		sink += x
	})
}

// BenchmarkAdd is the latency of one addition.
func BenchmarkAdd(b *testing.B) {
	sidebyside.Compare(b, func(n int) {
		x := uint64(x0)
		for range n {
			x = addV1(x, 0xF0EDCBA987654321)
		}
		sink += x
	}, func(n int) {
		x := uint64(x0)
		for range n {
			x = Add(x, 0xF0EDCBA987654321)
		}
		sink += x
	})
}

// BenchmarkInvPortable is the GCD's Go loop (old side, as on a CPU without
// BMI2 or with the purego tag) against the assembly loop (new side).
func BenchmarkInvPortable(b *testing.B) {
	sidebyside.Compare(b, func(n int) {
		x := uint64(x0)
		for range n {
			c, k := gcdSteps(x)
			x = Add(Mul(c, pow2Inv[k&127]), 1)
		}
		sink += x
	}, func(n int) {
		x := uint64(x0)
		for range n {
			x = Add(Inv(x), 1)
		}
		sink += x
	})
}
