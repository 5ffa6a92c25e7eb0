package field

import "math/bits"

// The implementation this package had before the branch-free rewrite,
// kept as a second reference for the tests and as the "old" side of the
// benchmarks, so that old/new ratios come from one run.

func reduceV1(x uint64) uint64 {
	if x >= P {
		return x - P
	}
	return x
}

func addV1(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		s += epsilon
	}
	return reduceV1(s)
}

func subV1(a, b uint64) uint64 {
	d, borrow := bits.Sub64(a, b, 0)
	if borrow != 0 {
		d -= epsilon
	}
	return d
}

func mulV1(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	hiHi := hi >> 32
	hiLo := hi & epsilon
	t0, borrow := bits.Sub64(lo, hiHi, 0)
	if borrow != 0 {
		t0 -= epsilon
	}
	t1 := hiLo * epsilon
	r, carry := bits.Add64(t0, t1, 0)
	if carry != 0 {
		r += epsilon
	}
	return reduceV1(r)
}

// invV1 is Fermat's a^(P−2) by square-and-multiply.
func invV1(a uint64) uint64 {
	if a == 0 {
		return 0
	}
	r, e := uint64(1), P-2
	for e != 0 {
		if e&1 != 0 {
			r = mulV1(r, a)
		}
		a = mulV1(a, a)
		e >>= 1
	}
	return r
}
