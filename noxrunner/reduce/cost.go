package reduce

import "github.com/cyberia-to/cyber-supervisor/noxrunner/noun"

// Pattern tags.
const (
	TagAxis    = 0
	TagQuote   = 1
	TagCompose = 2
	TagCons    = 3
	TagBranch  = 4
	TagAdd     = 5
	TagSub     = 6
	TagMul     = 7
	TagInv     = 8
	TagEq      = 9
	TagLt      = 10
	TagXor     = 11
	TagAnd     = 12
	TagNot     = 13
	TagShl     = 14
	TagHash    = 15
	TagCall    = 16
	TagLook    = 17
	NumTags    = 18
)

// costs is what each pattern charges up front; unknown tags charge 1.
var costs = [NumTags]uint64{
	TagAxis: 1, TagQuote: 1, TagCompose: 1, TagCons: 1, TagBranch: 1,
	TagAdd: 1, TagSub: 1, TagMul: 1, TagInv: 64, TagEq: 1, TagLt: 64,
	TagXor: 32, TagAnd: 32, TagNot: 32, TagShl: 32, TagHash: 25,
	TagCall: 1, TagLook: 1,
}

// PatternCost is the cost charged on entry to a formula with this tag.
func PatternCost(tag uint64) uint64 {
	if tag < NumTags {
		return costs[tag]
	}
	return 1
}

func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint64(0)
}

// Bound is the static cost bound of formula f: the most the formula can
// charge when nothing below it composes or calls (dynamic = false). It is
// what the reservation rule hands a child. Cached on each formula cell.
func Bound(f noun.Noun) (v uint64, dynamic bool) {
	c := f.Cell()
	if c == nil {
		return 0, false
	}
	if v, dyn, ok := c.CachedBound(); ok {
		return v, dyn
	}
	return boundSlow(f)
}

// boundSlow fills the bound caches below f without recursion: a formula
// built at run time can be millions of levels deep (the admission's depth
// bound covers only the program), and one Go frame per level would
// overflow the stack. Each formula is pushed until the bounds of the
// operands its pattern adds up are cached, then computed from them.
func boundSlow(f noun.Noun) (uint64, bool) {
	stack := []noun.Noun{f}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		if _, _, ok := top.Cell().CachedBound(); ok {
			stack = stack[:len(stack)-1]
			continue
		}
		ops, n := operands(top)
		pending := false
		for _, op := range ops[:n] {
			if c := op.Cell(); c != nil {
				if _, _, ok := c.CachedBound(); !ok {
					stack = append(stack, op)
					pending = true
				}
			}
		}
		if pending {
			continue
		}
		v, dyn := boundOf(top)
		top.Cell().SetBound(v, dyn)
		stack = stack[:len(stack)-1]
	}
	v, dyn, _ := f.Cell().CachedBound()
	return v, dyn
}

// operands lists the sub-formulas whose bounds the bound of pair f adds
// up (see boundOf): at most three.
func operands(f noun.Noun) (ops [3]noun.Noun, n int) {
	head := f.Head()
	if head.IsPair() || head.Value() >= NumTags {
		return ops, 0
	}
	body := f.Tail()
	switch head.Value() {
	case TagAxis, TagQuote:
		return ops, 0
	case TagInv, TagNot, TagHash:
		ops[0] = body
		return ops, 1
	}
	if body.IsAtom() {
		return ops, 0
	}
	switch head.Value() {
	case TagBranch:
		if body.Tail().IsAtom() {
			return ops, 0
		}
		ops[0], ops[1], ops[2] = body.Head(), body.Tail().Head(), body.Tail().Tail()
		return ops, 3
	case TagCall:
		ops[0] = body.Head()
		return ops, 1
	}
	ops[0], ops[1] = body.Head(), body.Tail()
	return ops, 2
}

// boundOf is the bound of pair f from its operands' bounds, which must be
// cached already (Bound then returns at once).
func boundOf(f noun.Noun) (uint64, bool) {
	head := f.Head()
	if head.IsPair() || head.Value() >= NumTags {
		return 0, false
	}
	tag := head.Value()
	base := costs[tag]
	body := f.Tail()
	switch tag {
	case TagAxis, TagQuote:
		return base, false
	case TagCompose:
		if body.IsAtom() {
			return base, false
		}
		x, _ := Bound(body.Head())
		y, _ := Bound(body.Tail())
		return satAdd(base, satAdd(x, y)), true
	case TagBranch:
		if body.IsAtom() || body.Tail().IsAtom() {
			return base, false
		}
		t, dt := Bound(body.Head())
		y, dy := Bound(body.Tail().Head())
		n, dn := Bound(body.Tail().Tail())
		return satAdd(base, satAdd(t, max(y, n))), dt || dy || dn
	case TagInv, TagNot, TagHash:
		a, da := Bound(body)
		return satAdd(base, a), da
	case TagCall:
		if body.IsAtom() {
			return base, false
		}
		t, _ := Bound(body.Head())
		return satAdd(base, t), true
	default: // binary patterns 3, 5, 6, 7, 9, 10, 11, 12, 14, 17
		if body.IsAtom() {
			return base, false
		}
		a, da := Bound(body.Head())
		b, db := Bound(body.Tail())
		return satAdd(base, satAdd(a, b)), da || db
	}
}
