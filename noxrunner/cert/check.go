package cert

import (
	"math/bits"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/hemera"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

const wordMask = 0xFFFFFFFF

// eval checks one reduce call of object o and formula f with the given
// budget and returns the disclosed result and the remaining budget. A
// certificate only certifies successful runs, so anything that would halt
// or fail in the real run rejects it.
//
// A v1 walk (no collection) pays one test for the v2 end of a call.
func (v *verifier) eval(o, f uint32, budget uint64, depth int) (uint32, uint64) {
	res, rem := v.step(o, f, budget, depth)
	if g := v.gc; g != nil && v.r.err == nil {
		// walkGC.exit, inlined by hand: it runs after every call.
		n := len(g.held)
		for n > 0 && g.held[n-1].depth > int32(depth) {
			n--
		}
		g.held = append(g.held[:n], heldResult{id: res, depth: int32(depth)})
		if v.t.gc.next >= g.dueAt {
			g.collect(v)
		}
	}
	return res, rem
}

// step is eval's check of the call itself.
func (v *verifier) step(o, f uint32, budget uint64, depth int) (uint32, uint64) {
	t := v.t
	if v.r.err != nil {
		return 0, 0
	}
	if depth > DepthLimit {
		return v.fail("step exceeds the depth limit")
	}
	// The formula's head and body, read once (the table's arrays may
	// move later in the step, when its result defines nodes).
	head := t.head
	h := head[f]
	if h == atomMark || head[h] != atomMark {
		return v.fail("step has a malformed formula")
	}
	v.entered++
	if v.entered > v.calls {
		return v.fail("run makes more calls than the witness has")
	}
	if v.entered%pollEvery == 0 && v.stopped() {
		return 0, 0
	}
	tag := t.val[h]
	body := t.tail[f]
	if tag == reduce.TagCall || tag == reduce.TagLook {
		return v.fail("call or look reached in the public profile")
	}
	c := reduce.PatternCost(tag)
	if budget < c {
		return v.fail("step cannot pay its cost")
	}
	b := budget - c
	var (
		want uint32 // the result the rule demands, when it names a node
		rem  uint64
	)
	switch tag {
	case reduce.TagAxis:
		if !t.isAtom(body) {
			return v.fail("axis address is a pair")
		}
		rem = b
		a := t.val[body]
		if a == 0 {
			r := v.result(MaxStepNodes)
			if v.r.err == nil {
				v.deferHash(o, r, false)
			}
			return r, rem
		}
		x, ok := v.walk(o, a)
		if !ok {
			return v.fail("axis walks through an atom")
		}
		want = x

	case reduce.TagQuote:
		want, rem = body, b

	case reduce.TagCompose:
		if t.isAtom(body) {
			return v.fail("compose body is an atom")
		}
		obj, fml, r := v.binary(o, t.head[body], t.tail[body], b, depth)
		if v.r.err != nil {
			return 0, 0
		}
		want, rem = v.eval(obj, fml, r, depth+1)

	case reduce.TagCons:
		if t.isAtom(body) {
			return v.fail("cons body is an atom")
		}
		x, y, r := v.binary(o, t.head[body], t.tail[body], b, depth)
		if v.r.err != nil {
			return 0, 0
		}
		res := v.result(1)
		if v.r.err == nil && (t.isAtom(res) || t.head[res] != x || t.tail[res] != y) {
			return v.fail("cons result is not the pair of its operands")
		}
		return res, r

	case reduce.TagBranch:
		if t.isAtom(body) || t.isAtom(t.tail[body]) {
			return v.fail("branch body is malformed")
		}
		cond, r := v.unary(o, t.head[body], b, depth)
		if v.r.err != nil {
			return 0, 0
		}
		if !t.isAtom(cond) {
			return v.fail("branch test is a pair")
		}
		arm := t.tail[t.tail[body]]
		if t.val[cond] == 0 {
			arm = t.head[t.tail[body]]
		}
		want, rem = v.unary(o, arm, r, depth)

	case reduce.TagAdd, reduce.TagSub, reduce.TagMul, reduce.TagLt,
		reduce.TagXor, reduce.TagAnd, reduce.TagShl, reduce.TagEq:
		if t.isAtom(body) {
			return v.fail("binary pattern body is an atom")
		}
		x, y, r := v.binary(o, t.head[body], t.tail[body], b, depth)
		if v.r.err != nil {
			return 0, 0
		}
		val, ok := v.binaryValue(tag, x, y)
		if !ok {
			return v.fail("operands have the wrong type")
		}
		return v.atomResult(val, "binary result is wrong"), r

	case reduce.TagInv:
		x, r := v.unary(o, body, b, depth)
		if v.r.err != nil {
			return 0, 0
		}
		if !t.isAtom(x) || t.val[x] == 0 {
			return v.fail("inverse of a pair or of zero")
		}
		// The disclosed inverse is checked by one multiplication.
		res := v.result(1)
		if v.r.err == nil && (!t.isAtom(res) || field.Mul(t.val[res], t.val[x]) != 1) {
			return v.fail("inverse result is wrong")
		}
		return res, r

	case reduce.TagNot:
		x, r := v.unary(o, body, b, depth)
		if v.r.err != nil {
			return 0, 0
		}
		if !t.isAtom(x) || t.val[x] > wordMask {
			return v.fail("not of a non-word")
		}
		return v.atomResult(^t.val[x]&wordMask, "not result is wrong"), r

	case reduce.TagHash:
		x, r := v.unary(o, body, b, depth)
		if v.r.err != nil {
			return 0, 0
		}
		res := v.result(MaxStepNodes)
		if v.r.err == nil {
			v.deferHash(x, res, true)
		}
		return res, r

	default:
		return v.fail("unknown pattern")
	}
	if v.r.err != nil {
		return 0, 0
	}
	if v.gc != nil {
		// v2: the verifier knows the result (want); a compose's or a
		// branch's is not written, an axis's or a quote's is one fixed
		// byte, so that every call the walk makes without children
		// still reads a byte (docs/certificate.md, "Results the
		// verifier knows").
		if tag == reduce.TagAxis || tag == reduce.TagQuote {
			// Its byte, read inline (half of a loop's calls).
			if r, p := v.r, v.r.pos; p < len(r.b) && r.b[p] == namedResultV2 {
				r.pos = p + 1
			} else {
				v.namedSlow()
			}
		}
		return want, rem
	}
	// The rule names a node the table has: the result is a back-reference.
	res := v.result(0)
	if v.r.err == nil && res != want {
		return v.fail("result differs from the rule")
	}
	return res, rem
}

// binaryValue applies an atom-valued binary pattern; ok=false is a type
// error in the real run.
func (v *verifier) binaryValue(tag uint64, x, y uint32) (uint64, bool) {
	t := v.t
	if tag == reduce.TagEq {
		// Distinct ids are distinct nouns: the table holds no duplicates.
		if x == y {
			return 0, true
		}
		return 1, true
	}
	if !t.isAtom(x) || !t.isAtom(y) {
		return 0, false
	}
	a, n := t.val[x], t.val[y]
	switch tag {
	case reduce.TagAdd:
		return field.Add(a, n), true
	case reduce.TagSub:
		return field.Sub(a, n), true
	case reduce.TagMul:
		return field.Mul(a, n), true
	case reduce.TagLt:
		if a < n {
			return 0, true
		}
		return 1, true
	}
	if a > wordMask || n > wordMask {
		return 0, false
	}
	switch tag {
	case reduce.TagXor:
		return a ^ n, true
	case reduce.TagAnd:
		return a & n, true
	default: // shl
		if n >= 32 {
			return 0, true
		}
		return (a << n) & wordMask, true
	}
}

// atomResult reads the disclosed result and checks it is the atom val.
func (v *verifier) atomResult(val uint64, what string) uint32 {
	res := v.result(1)
	if v.r.err == nil && (!v.t.isAtom(res) || v.t.val[res] != val) {
		v.r.fail(what)
	}
	return res
}

// walk follows an axis address (≥ 2) through the object.
func (v *verifier) walk(o uint32, a uint64) (uint32, bool) {
	t := v.t
	for bit := 62 - bits.LeadingZeros64(a); bit >= 0; bit-- {
		if t.isAtom(o) {
			return 0, false
		}
		if a>>uint(bit)&1 == 0 {
			o = t.head[o]
		} else {
			o = t.tail[o]
		}
	}
	return o, true
}

// isHashData reports whether id is the noun [[d0 d1] [d2 d3]].
func (v *verifier) isHashData(id uint32, d hemera.Digest) bool {
	t := v.t
	if t.isAtom(id) {
		return false
	}
	l, r := t.head[id], t.tail[id]
	return v.isAtomPair(l, d[0], d[1]) && v.isAtomPair(r, d[2], d[3])
}

func (v *verifier) isAtomPair(id uint32, a, b uint64) bool {
	t := v.t
	if t.isAtom(id) {
		return false
	}
	h, tl := t.head[id], t.tail[id]
	return t.isAtom(h) && t.isAtom(tl) && t.val[h] == a && t.val[tl] == b
}

// outputsEqual compares the result's atoms, left to right, with outs.
func (v *verifier) outputsEqual(res uint32, outs []uint64) bool {
	t := v.t
	i := 0
	stack := []uint32{res}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if t.isAtom(n) {
			if i >= len(outs) || t.val[n] != outs[i] {
				return false
			}
			i++
			continue
		}
		stack = append(stack, t.tail[n], t.head[n])
	}
	return i == len(outs)
}
