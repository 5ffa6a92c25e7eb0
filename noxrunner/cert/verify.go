package cert

import (
	"math/bits"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// Verify checks an uncompressed certificate on its own: the encoding, every
// reduction step and the cost accounting. It returns the statement it
// proves. Whether that statement is the one a caller wanted is a separate
// question: see Expect.Check.
func Verify(b []byte) (*Statement, error) {
	if len(b) > MaxEncodedBytes {
		return nil, rejectf("%d bytes is over the %d-byte limit", len(b), MaxEncodedBytes)
	}
	r := &reader{b: b}
	st, _ := readStatement(r)
	if r.err != nil {
		return nil, r.err
	}
	// Every call consumes at least one byte of tape.
	calls := r.count(uint64(len(b)), 1, "call")
	if r.err != nil {
		return nil, r.err
	}
	// Most certificates are small: start small and let the table grow.
	v := &verifier{r: r, t: newTable(min(calls, 1<<16)/4 + 64), calls: uint64(calls)}
	progID, _ := v.t.addTokens(st.Program)
	subjID := v.t.addSubject(st.Inputs)
	res, rem := v.eval(subjID, progID, st.Budget, 0)
	if r.err != nil {
		return nil, r.err
	}
	if v.entered != v.calls {
		return nil, rejectf("witness has %d calls, the run made %d", v.calls, v.entered)
	}
	if r.pos != len(r.b) {
		return nil, rejectf("%d trailing bytes", len(r.b)-r.pos)
	}
	if st.Budget-rem != st.Reductions {
		return nil, rejectf("reductions %d, the steps cost %d", st.Reductions, st.Budget-rem)
	}
	if !v.outputsEqual(res, st.Outputs) {
		return nil, rejectf("outputs differ from the result")
	}
	if err := v.checkHashes(); err != nil {
		return nil, err
	}
	return st, nil
}

// verifier walks the formulas with the disclosed results. Every failure is
// recorded in r.err (the first one wins) and unwinds the walk.
type verifier struct {
	r       *reader
	t       *table
	calls   uint64 // tape entries announced
	entered uint64 // calls walked so far
	pending []pend // scratch for readRef
	hashes  []hashCheck
}

type pend struct {
	head    uint32
	hasHead bool
}

// readRef reads one reference, defining new nodes inline. Iterative, since
// a definition may nest as deep as the certificate is long. A definition
// of a node the table already has is not canonical.
func (v *verifier) readRef() uint32 {
	r := v.r
	stack := v.pending[:0]
	defer func() { v.pending = stack[:0] }()
	for {
		x := r.uvarint()
		if r.err != nil {
			return 0
		}
		var id uint32
		switch {
		case x == refPair:
			stack = append(stack, pend{})
			continue
		case x == refAtom:
			val := r.uvarint()
			if r.err != nil {
				return 0
			}
			if val >= field.P {
				r.fail("non-canonical atom")
				return 0
			}
			var added bool
			if id, added = v.t.atom(val); !added {
				r.fail("atom defined twice")
				return 0
			}
		default:
			back := x - refBack
			if back >= uint64(v.t.len()) {
				r.fail("reference before the first node")
				return 0
			}
			id = v.t.len() - 1 - uint32(back)
		}
		for {
			if len(stack) == 0 {
				return id
			}
			top := &stack[len(stack)-1]
			if !top.hasHead {
				top.head, top.hasHead = id, true
				break
			}
			var added bool
			if id, added = v.t.pair(top.head, id); !added {
				r.fail("pair defined twice")
				return 0
			}
			stack = stack[:len(stack)-1]
		}
	}
}

// result reads the disclosed result of the call that just finished.
func (v *verifier) result() uint32 { return v.readRef() }

func (v *verifier) fail(what string) (uint32, uint64) {
	v.r.fail(what)
	return 0, 0
}

// bound is reduce.Bound over table ids.
func (v *verifier) bound(f uint32) (uint64, bool) {
	t := v.t
	if t.isAtom(f) {
		return 0, false
	}
	if t.bflags[f]&1 != 0 {
		return t.bound[f], t.bflags[f]&2 != 0
	}
	b, dyn := v.boundOf(f)
	t.bound[f] = b
	t.bflags[f] = 1
	if dyn {
		t.bflags[f] |= 2
	}
	return b, dyn
}

func (v *verifier) boundOf(f uint32) (uint64, bool) {
	t := v.t
	h := t.head[f]
	if !t.isAtom(h) || t.val[h] >= reduce.NumTags {
		return 0, false
	}
	tag := t.val[h]
	base := reduce.PatternCost(tag)
	body := t.tail[f]
	switch tag {
	case reduce.TagAxis, reduce.TagQuote:
		return base, false
	case reduce.TagCompose:
		if t.isAtom(body) {
			return base, false
		}
		x, _ := v.bound(t.head[body])
		y, _ := v.bound(t.tail[body])
		return satAdd(base, satAdd(x, y)), true
	case reduce.TagBranch:
		if t.isAtom(body) || t.isAtom(t.tail[body]) {
			return base, false
		}
		c, dc := v.bound(t.head[body])
		y, dy := v.bound(t.head[t.tail[body]])
		n, dn := v.bound(t.tail[t.tail[body]])
		return satAdd(base, satAdd(c, max(y, n))), dc || dy || dn
	case reduce.TagInv, reduce.TagNot, reduce.TagHash:
		a, da := v.bound(body)
		return satAdd(base, a), da
	case reduce.TagCall:
		if t.isAtom(body) {
			return base, false
		}
		c, _ := v.bound(t.head[body])
		return satAdd(base, c), true
	default:
		if t.isAtom(body) {
			return base, false
		}
		a, da := v.bound(t.head[body])
		b, db := v.bound(t.tail[body])
		return satAdd(base, satAdd(a, b)), da || db
	}
}

func satAdd(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 {
		return ^uint64(0)
	}
	return s
}

func (v *verifier) unary(o, a uint32, b uint64, depth int) (uint32, uint64) {
	if bv, dyn := v.bound(a); !dyn && bv <= b {
		x, r := v.eval(o, a, bv, depth+1)
		return x, b - (bv - r)
	}
	return v.eval(o, a, b, depth+1)
}

func (v *verifier) binary(o, x, y uint32, b uint64, depth int) (uint32, uint32, uint64) {
	vx, dx := v.bound(x)
	vy, dy := v.bound(y)
	if !dx && !dy && satAdd(vx, vy) <= b {
		rx, remx := v.eval(o, x, vx, depth+1)
		if v.r.err != nil {
			return 0, 0, 0
		}
		ry, remy := v.eval(o, y, vy, depth+1)
		return rx, ry, b - ((vx - remx) + (vy - remy))
	}
	rx, b1 := v.eval(o, x, b, depth+1)
	if v.r.err != nil {
		return 0, 0, 0
	}
	ry, b2 := v.eval(o, y, b1, depth+1)
	return rx, ry, b2
}
