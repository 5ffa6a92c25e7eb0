package cert

import "github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"

// bound is reduce.Bound over table ids, cached per node.
func (v *verifier) bound(f uint32) (uint64, bool) {
	// An atom's flags are never set: boundSlow answers for it.
	t := v.t
	if fl := t.bflags[f]; fl&boundKnown != 0 {
		return t.bound[f], fl&boundDynamic != 0
	}
	return v.boundSlow(f)
}

const (
	boundKnown   uint8 = 1
	boundDynamic uint8 = 2
)

// boundSlow fills the bound caches below f without recursion: a witness
// can define formulas millions of levels deep. As in reduce.Bound, a
// formula waits on the stack until its operands' bounds are known.
func (v *verifier) boundSlow(f uint32) (uint64, bool) {
	t := v.t
	if t.isAtom(f) {
		return 0, false
	}
	stack := append(v.bstack[:0], f)
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		if t.bflags[top]&boundKnown != 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		ops, n := v.operands(top)
		pending := false
		for _, op := range ops[:n] {
			if !t.isAtom(op) && t.bflags[op]&boundKnown == 0 {
				stack = append(stack, op)
				pending = true
			}
		}
		if pending {
			continue
		}
		b, dyn := v.boundOf(top)
		t.bound[top] = b
		t.bflags[top] = boundKnown
		if dyn {
			t.bflags[top] |= boundDynamic
		}
		stack = stack[:len(stack)-1]
	}
	v.bstack = stack[:0]
	return t.bound[f], t.bflags[f]&boundDynamic != 0
}

// operands lists the sub-formulas whose bounds the bound of pair f adds
// up (see boundOf): at most three.
func (v *verifier) operands(f uint32) (ops [3]uint32, n int) {
	t := v.t
	h := t.head[f]
	if !t.isAtom(h) || t.val[h] >= reduce.NumTags {
		return ops, 0
	}
	body := t.tail[f]
	switch t.val[h] {
	case reduce.TagAxis, reduce.TagQuote:
		return ops, 0
	case reduce.TagInv, reduce.TagNot, reduce.TagHash:
		ops[0] = body
		return ops, 1
	}
	if t.isAtom(body) {
		return ops, 0
	}
	switch t.val[h] {
	case reduce.TagBranch:
		if t.isAtom(t.tail[body]) {
			return ops, 0
		}
		ops[0], ops[1], ops[2] = t.head[body], t.head[t.tail[body]], t.tail[t.tail[body]]
		return ops, 3
	case reduce.TagCall:
		ops[0] = t.head[body]
		return ops, 1
	}
	ops[0], ops[1] = t.head[body], t.tail[body]
	return ops, 2
}

// boundOf is the bound of pair f from its operands' bounds, which must be
// known already.
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
