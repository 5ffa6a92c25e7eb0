package hostile

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/hemera"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// tracer writes the certificate of a run (docs/certificate.md) the way
// noxrunner/cert's prover records one, for the few patterns the digest
// attacks use: axis, quote, compose, cons and hash. It evaluates over a
// table of distinct nouns numbered as prover and verifier number them,
// and writes each call's result as a back-reference or a definition.
//
// It is here rather than in cert so that cert's own tests can use the
// attacks (the tests compare its bytes with cert.Prove's), and it is fast
// where proving is not: a call it has evaluated before on the same object
// and formula, while the table had the same size and without defining a
// node, is replayed by copying the bytes it wrote then. A run of 2^25
// calls whose results the table already holds costs a few copies.
type tracer struct {
	head, tail []uint32 // tail is unused for atoms
	val        []uint64
	atoms      map[uint64]uint32
	pairs      map[[2]uint32]uint32
	digests    map[uint32]hemera.Digest
	tape       []byte
	calls      uint64
	cost       uint64
	replays    map[replayKey]replay
	// forge makes every digest step disclose the hash-data of a wrong
	// digest (its first word plus one): a certificate that passes the
	// walk and fails only when its digests are checked.
	forge bool
}

const atomMark = ^uint32(0)

type replayKey struct{ object, formula, tableLen uint32 }

// replay is a call's bytes tape[from:to], its result and what it cost.
type replay struct {
	from, to    int
	result      uint32
	calls, cost uint64
}

func newTracer() *tracer {
	return &tracer{
		atoms:   map[uint64]uint32{},
		pairs:   map[[2]uint32]uint32{},
		digests: map[uint32]hemera.Digest{},
		replays: map[replayKey]replay{},
	}
}

func (t *tracer) len() uint32           { return uint32(len(t.head)) }
func (t *tracer) isAtom(id uint32) bool { return t.head[id] == atomMark }

func (t *tracer) atom(v uint64) uint32 {
	if id, ok := t.atoms[v]; ok {
		return id
	}
	id := t.len()
	t.head, t.tail, t.val = append(t.head, atomMark), append(t.tail, 0), append(t.val, v)
	t.atoms[v] = id
	return id
}

func (t *tracer) pair(h, tl uint32) uint32 {
	if id, ok := t.pairs[[2]uint32{h, tl}]; ok {
		return id
	}
	id := t.len()
	t.head, t.tail, t.val = append(t.head, h), append(t.tail, tl), append(t.val, 0)
	t.pairs[[2]uint32{h, tl}] = id
	return id
}

// intern adds n post-order, head before tail, each distinct noun once (the
// program's numbering), and returns its id.
func (t *tracer) intern(n noun.Noun) uint32 {
	if n.IsAtom() {
		return t.atom(n.Value())
	}
	h := t.intern(n.Head())
	return t.pair(h, t.intern(n.Tail()))
}

// digest is the noun digest of id, each node's computed once
// (iteratively: the attacks' lists are hundreds of thousands deep).
func (t *tracer) digest(id uint32) hemera.Digest {
	stack := []uint32{id}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		if _, ok := t.digests[top]; ok {
			stack = stack[:len(stack)-1]
			continue
		}
		if t.isAtom(top) {
			t.digests[top] = hemera.AtomDigest(t.val[top])
			stack = stack[:len(stack)-1]
			continue
		}
		dh, hok := t.digests[t.head[top]]
		dt, tok := t.digests[t.tail[top]]
		if hok && tok {
			t.digests[top] = hemera.PairDigest(dh, dt)
			stack = stack[:len(stack)-1]
			continue
		}
		if !tok {
			stack = append(stack, t.tail[top])
		}
		if !hok {
			stack = append(stack, t.head[top])
		}
	}
	return t.digests[id]
}

// hashData interns [[d0 d1] [d2 d3]] as a result's definitions complete:
// atoms and pairs post-order, head before tail.
func (t *tracer) hashData(d hemera.Digest) uint32 {
	if t.forge {
		d[0] = (d[0] + 1) % field.P
	}
	l := t.pair(t.atom(d[0]), t.atom(d[1]))
	return t.pair(l, t.pair(t.atom(d[2]), t.atom(d[3])))
}

// Pattern tags and costs (noxrunner/reduce).
const (
	tagAxis, tagQuote, tagCompose, tagCons, tagHash = 0, 1, 2, 3, 15
	hashCost                                        = 25
)

// eval runs formula f on object o, writing each call's result after its
// children's, and returns the result's id.
func (t *tracer) eval(o, f uint32) uint32 {
	key := replayKey{o, f, t.len()}
	if r, ok := t.replays[key]; ok {
		// Doubling, not append's quarter for large slices: the tape of
		// the dense axis-0 attack grows to 33.6 MB by such copies.
		if n := r.to - r.from; len(t.tape)+n > cap(t.tape) {
			t.tape = slices.Grow(t.tape, max(n, len(t.tape)))
		}
		t.tape = append(t.tape, t.tape[r.from:r.to]...)
		t.calls += r.calls
		t.cost += r.cost
		return r.result
	}
	from, calls, cost := len(t.tape), t.calls, t.cost
	if t.isAtom(f) || !t.isAtom(t.head[f]) {
		panic(fmt.Sprintf("hostile: formula %d is not [tag body]", f))
	}
	next := t.len() // the verifier knows the ids below next
	body := t.tail[f]
	var res uint32
	t.cost++
	switch tag := t.val[t.head[f]]; tag {
	case tagAxis:
		a := t.val[body]
		if a == 0 {
			res = t.hashData(t.digest(o))
			break
		}
		res = t.walk(o, a)
	case tagQuote:
		res = body
	case tagCompose:
		x := t.eval(o, t.head[body])
		y := t.eval(o, t.tail[body])
		res = t.eval(x, y)
		next = t.len()
	case tagCons:
		x := t.eval(o, t.head[body])
		y := t.eval(o, t.tail[body])
		next = t.len()
		res = t.pair(x, y)
	case tagHash:
		x := t.eval(o, body)
		next = t.len()
		t.cost += hashCost - 1
		res = t.hashData(hemera.HashData(t.digest(x)))
	default:
		panic(fmt.Sprintf("hostile: pattern %d is not traced", tag))
	}
	t.calls++
	t.emit(res, next)
	if t.len() == key.tableLen {
		t.replays[key] = replay{from: from, to: len(t.tape), result: res, calls: t.calls - calls, cost: t.cost - cost}
	}
	return res
}

// walk follows axis address a (≥ 1) through o.
func (t *tracer) walk(o uint32, a uint64) uint32 {
	top := 63
	for a>>uint(top) == 0 {
		top--
	}
	for bit := top - 1; bit >= 0; bit-- {
		if t.isAtom(o) {
			panic("hostile: axis walks through an atom")
		}
		if a>>uint(bit)&1 == 0 {
			o = t.head[o]
		} else {
			o = t.tail[o]
		}
	}
	return o
}

// emit writes a reference to id given that the verifier knows the ids
// below next: a back-reference, or a definition whose nodes complete in
// the order they were numbered.
func (t *tracer) emit(id, next uint32) {
	type item struct {
		id    uint32
		close bool
	}
	stack := []item{{id: id}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch {
		case it.close:
			next++
		case it.id < next:
			t.tape = binary.AppendUvarint(t.tape, uint64(2+next-1-it.id))
		case t.isAtom(it.id):
			t.tape = binary.AppendUvarint(binary.AppendUvarint(t.tape, 0), t.val[it.id])
			next++
		default:
			t.tape = binary.AppendUvarint(t.tape, 1)
			stack = append(stack, item{close: true}, item{id: t.tail[it.id]}, item{id: t.head[it.id]})
		}
	}
}

// outputs are the atoms of id, left to right.
func (t *tracer) outputs(id uint32) []uint64 {
	var out []uint64
	stack := []uint32{id}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if t.isAtom(n) {
			out = append(out, t.val[n])
			continue
		}
		stack = append(stack, t.tail[n], t.head[n])
	}
	return out
}

// trace writes the certificate of program applied to the subject of no
// inputs (the atom 0) under budget, for programs of axis, quote, compose,
// cons and hash only, with room for a witness of size bytes, forged or
// not (tracer.forge). It panics on any other pattern, on a run that
// fails, and on one that costs more than budget: the programs are this
// package's own.
func trace(program string, budget uint64, size int, forge bool) []byte {
	p, err := noun.Parse(program)
	if err != nil {
		panic(err)
	}
	t := newTracer()
	t.forge = forge
	t.tape = make([]byte, 0, size)
	prog := t.intern(p)
	subject := t.atom(0)
	res := t.eval(subject, prog)
	if t.cost > budget {
		panic(fmt.Sprintf("hostile: the run costs %d, over its budget of %d", t.cost, budget))
	}
	st := statement{program: noun.AppendTokens(nil, p), outputs: t.outputs(res), reductions: t.cost, budget: budget, calls: t.calls}
	return append(st.append(nil), t.tape...)
}

// statement is a certificate's statement and call count.
type statement struct {
	program                   []byte // canonical tokens
	inputs, outputs           []uint64
	reductions, budget, calls uint64
}

// append writes the statement as docs/certificate.md lays it out. The
// bytes are written here, not by noxrunner/cert, so that cert's own tests
// can use them.
func (s statement) append(b []byte) []byte {
	const profile = "cyber-nox-public-trace-v1"
	b = append(b, "CYNXTRC1"...)
	b = binary.AppendUvarint(b, uint64(len(profile)))
	b = append(b, profile...)
	b = binary.AppendUvarint(b, uint64(len(s.program)))
	b = append(b, s.program...)
	for _, list := range [][]uint64{s.inputs, s.outputs} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, x := range list {
			b = binary.AppendUvarint(b, x)
		}
	}
	b = binary.AppendUvarint(b, s.reductions)
	b = binary.AppendUvarint(b, s.budget)
	return binary.AppendUvarint(b, s.calls)
}
