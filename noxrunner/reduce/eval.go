package reduce

import (
	"math/bits"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/hemera"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

const wordMask = 0xFFFFFFFF

// eval is one reduce call. The order of checks is observable and follows
// the reference: depth, malformed formula (free), cost (Halt with the
// budget at hand), then the pattern.
func (m *Machine) eval(o, f noun.Noun, budget uint64, depth int) (noun.Noun, uint64, st) {
	if depth > m.depthLimit {
		m.deep = true
		return none, 0, errMalformed
	}
	if f.IsAtom() {
		return none, 0, errMalformed
	}
	head := f.Head()
	if head.IsPair() {
		return none, 0, errMalformed
	}
	m.steps++
	if m.steps%pollEvery == 0 && m.poll() {
		return none, 0, stAbort
	}
	tag := head.Value()
	if m.admit && (tag == TagCall || tag == TagLook) {
		if err := m.provider.Admit(tag); err != nil {
			m.abort = err
			return none, 0, stAbort
		}
	}
	c := uint64(1)
	if tag < NumTags {
		c = costs[tag]
	}
	if budget < c {
		return none, budget, stHalt
	}
	r, rem, s := m.pattern(o, tag, f.Tail(), budget-c, depth)
	if s == stOK && m.tracer != nil {
		if err := m.tracer.Exit(f, r, depth); err != nil {
			m.abort = err
			return none, 0, stAbort
		}
	}
	return r, rem, s
}

// unary evaluates one child under the reservation rule: a child whose
// static bound fits gets exactly that bound, and the parent keeps the rest.
func (m *Machine) unary(o, a noun.Noun, b uint64, depth int) (noun.Noun, uint64, st) {
	if v, dyn := Bound(a); !dyn && v <= b {
		x, r, s := m.eval(o, a, v, depth+1)
		if s != stOK {
			return x, r, s
		}
		return x, b - (v - r), stOK
	}
	return m.eval(o, a, b, depth+1)
}

// operands evaluates the two children of a binary pattern's body; a body
// that is not a pair is Malformed, before anything is evaluated.
func (m *Machine) operands(o, body noun.Noun, b uint64, depth int) (noun.Noun, noun.Noun, uint64, st) {
	if body.IsAtom() {
		return none, none, 0, errMalformed
	}
	return m.binary(o, body.Head(), body.Tail(), b, depth)
}

// binary evaluates two children, left first, under the reservation rule
// when both bounds are static and fit together; otherwise the budget is
// threaded from left to right.
func (m *Machine) binary(o, x, y noun.Noun, b uint64, depth int) (noun.Noun, noun.Noun, uint64, st) {
	vx, dx := Bound(x)
	vy, dy := Bound(y)
	if !dx && !dy && satAdd(vx, vy) <= b {
		rx, remx, s := m.eval(o, x, vx, depth+1)
		if s != stOK {
			return none, none, remx, s
		}
		if rx.IsPair() {
			if p := m.slot(depth); p != nil {
				p.hold(rx)
			}
		}
		ry, remy, s := m.eval(o, y, vy, depth+1)
		m.release(depth)
		if s != stOK {
			return none, none, remy, s
		}
		return rx, ry, b - ((vx - remx) + (vy - remy)), stOK
	}
	rx, b1, s := m.eval(o, x, b, depth+1)
	if s != stOK {
		return none, none, b1, s
	}
	if rx.IsPair() {
		if p := m.slot(depth); p != nil {
			p.hold(rx)
		}
	}
	ry, b2, s := m.eval(o, y, b1, depth+1)
	m.release(depth)
	if s != stOK {
		return none, none, b2, s
	}
	return rx, ry, b2, stOK
}

func (m *Machine) pattern(o noun.Noun, tag uint64, body noun.Noun, b uint64, depth int) (noun.Noun, uint64, st) {
	switch tag {
	case TagAxis:
		if body.IsPair() {
			return none, 0, errMalformed
		}
		return m.axis(o, body.Value(), b)

	case TagQuote:
		return body, b, stOK

	case TagCompose:
		obj, fml, rem, s := m.operands(o, body, b, depth)
		if s != stOK {
			return none, rem, s
		}
		if p := m.slot(depth); p != nil {
			p.hold2(obj, fml)
		}
		r, rem, s := m.eval(obj, fml, rem, depth+1)
		m.release(depth)
		return r, rem, s

	case TagCons:
		a, c, rem, s := m.operands(o, body, b, depth)
		if s != stOK {
			return none, rem, s
		}
		p, ok := m.cons(a, c)
		if !ok {
			return none, 0, stAbort
		}
		return p, rem, stOK

	case TagBranch:
		if body.IsAtom() || body.Tail().IsAtom() {
			return none, 0, errMalformed
		}
		t, rem, s := m.unary(o, body.Head(), b, depth)
		if s != stOK {
			return none, rem, s
		}
		if t.IsPair() {
			return none, 0, errType
		}
		if t.Value() == 0 {
			return m.unary(o, body.Tail().Head(), rem, depth)
		}
		return m.unary(o, body.Tail().Tail(), rem, depth)

	case TagAdd, TagSub, TagMul, TagLt:
		x, y, rem, s := m.operands(o, body, b, depth)
		if s != stOK {
			return none, rem, s
		}
		if x.IsPair() || y.IsPair() {
			return none, 0, errType
		}
		var v uint64
		switch tag {
		case TagAdd:
			v = field.Add(x.Value(), y.Value())
		case TagSub:
			v = field.Sub(x.Value(), y.Value())
		case TagMul:
			v = field.Mul(x.Value(), y.Value())
		default:
			v = boolAtom(x.Value() < y.Value())
		}
		return noun.Atom(v), rem, stOK

	case TagInv:
		x, rem, s := m.unary(o, body, b, depth)
		if s != stOK {
			return none, rem, s
		}
		if x.IsPair() {
			return none, 0, errType
		}
		if x.Value() == 0 {
			return none, 0, errInvZero
		}
		return noun.Atom(field.Inv(x.Value())), rem, stOK

	case TagEq:
		x, y, rem, s := m.operands(o, body, b, depth)
		if s != stOK {
			return none, rem, s
		}
		eq, ok := noun.EqualInterruptible(x, y, m.stop)
		if !ok {
			return none, 0, stAbort
		}
		return noun.Atom(boolAtom(eq)), rem, stOK

	case TagXor, TagAnd, TagShl:
		x, y, rem, s := m.operands(o, body, b, depth)
		if s != stOK {
			return none, rem, s
		}
		if !isWord(x) || !isWord(y) {
			return none, 0, errType
		}
		a, n := x.Value(), y.Value()
		var v uint64
		switch tag {
		case TagXor:
			v = a ^ n
		case TagAnd:
			v = a & n
		default:
			if n < 32 {
				v = (a << n) & wordMask
			}
		}
		return noun.Atom(v), rem, stOK

	case TagNot:
		x, rem, s := m.unary(o, body, b, depth)
		if s != stOK {
			return none, rem, s
		}
		if !isWord(x) {
			return none, 0, errType
		}
		return noun.Atom(^x.Value() & wordMask), rem, stOK

	case TagHash:
		x, rem, s := m.unary(o, body, b, depth)
		if s != stOK {
			return none, rem, s
		}
		d, ok := x.DigestInterruptible(m.stop)
		if !ok {
			return none, 0, stAbort
		}
		h, ok := m.hashData(hemera.HashData(d))
		if !ok {
			return none, 0, stAbort
		}
		return h, rem, stOK

	case TagCall:
		return m.call(o, body, b, depth)

	case TagLook:
		return m.look(o, body, b, depth)

	default:
		return none, 0, errMalformed
	}
}

// boolAtom is nox's boolean: 0 is true.
func boolAtom(b bool) uint64 {
	if b {
		return 0
	}
	return 1
}

func isWord(n noun.Noun) bool { return n.IsAtom() && n.Value() <= wordMask }

// axis walks the object along the bits of a below its leading one, most
// significant first (0 = head, 1 = tail). Address 0 is the object's digest
// as hash-data; 1 is the object itself.
func (m *Machine) axis(o noun.Noun, a uint64, b uint64) (noun.Noun, uint64, st) {
	switch a {
	case 0:
		d, ok := o.DigestInterruptible(m.stop)
		if !ok {
			return none, 0, stAbort
		}
		h, ok := m.hashData(d)
		if !ok {
			return none, 0, stAbort
		}
		return h, b, stOK
	case 1:
		return o, b, stOK
	}
	for bit := 62 - bits.LeadingZeros64(a); bit >= 0; bit-- {
		if o.IsAtom() {
			return none, 0, errAxis
		}
		if a>>uint(bit)&1 == 0 {
			o = o.Head()
		} else {
			o = o.Tail()
		}
	}
	return o, b, stOK
}

// hashData is the noun [[d0 d1] [d2 d3]]. Its halves are built before
// the pair that holds them, which is the one a census may count from
// (m.cons).
func (m *Machine) hashData(d hemera.Digest) (noun.Noun, bool) {
	l := m.heap.Cons(noun.Atom(d[0]), noun.Atom(d[1]))
	r := m.heap.Cons(noun.Atom(d[2]), noun.Atom(d[3]))
	return m.cons(l, r)
}

func (m *Machine) call(o, body noun.Noun, b uint64, depth int) (noun.Noun, uint64, st) {
	if body.IsAtom() {
		return none, 0, errMalformed
	}
	t, rem, s := m.unary(o, body.Head(), b, depth)
	if s != stOK {
		return none, rem, s
	}
	if t.IsPair() {
		return none, 0, errType
	}
	w, ok, err := m.provider.Call(t.Value(), o)
	if err != nil {
		m.abort = err
		return none, 0, stAbort
	}
	if !ok {
		return none, rem, stHalt
	}
	if w.IsPair() && m.nextCensus != ^uint64(0) {
		// What the run holds is no longer bounded by the pairs it
		// built: count it with the witness, at the next pair.
		m.nextCensus = m.heap.Count() + 1
	}
	subject, okc := m.cons(w, o)
	if !okc {
		return none, 0, stAbort
	}
	// The check runs with plain threading: it is not a reserved child.
	if p := m.slot(depth); p != nil {
		p.hold(subject)
	}
	r, rem, s := m.eval(subject, body.Tail(), rem, depth+1)
	m.release(depth)
	if s != stOK {
		return none, rem, s
	}
	if r.IsAtom() && r.Value() == 0 {
		return w, rem, stOK
	}
	return none, 0, errRejected
}

// look limbs sit at axes 4, 10, 22, 23 of the object: [[l0 [l1 [l2 l3]]] rest].
var lookAxes = [4]uint64{4, 10, 22, 23}

func (m *Machine) look(o, body noun.Noun, b uint64, depth int) (noun.Noun, uint64, st) {
	ns, key, rem, s := m.operands(o, body, b, depth)
	if s != stOK {
		return none, rem, s
	}
	if ns.IsPair() || key.IsPair() {
		return none, 0, errType
	}
	if ns.Value() > 9 {
		return none, 0, errUnavailable
	}
	var root [4]uint64
	for i, a := range lookAxes {
		limb, _, s := m.axis(o, a, 0)
		if s != stOK || limb.IsPair() {
			return none, 0, errUnavailable
		}
		root[i] = limb.Value()
	}
	v, ok, err := m.provider.Look(root, ns.Value(), key.Value())
	if err != nil {
		m.abort = err
		return none, 0, stAbort
	}
	if !ok {
		return none, 0, errUnavailable
	}
	return noun.Atom(field.Reduce(v)), rem, stOK
}
