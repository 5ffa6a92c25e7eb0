package noun

import (
	"errors"
	"strconv"
)

// ErrTooLarge is returned when a noun's text or tree exceeds a caller's
// bound. Shared subtrees are expanded in text, so a small DAG can have an
// exponentially large text form; every printer here is bounded.
var ErrTooLarge = errors.New("noun too large")

// String prints n in the reference syntax: atoms in decimal, pairs as
// [L R] with no list sugar. Up to 1 MiB of text; longer nouns are cut with
// "…".
func (n Noun) String() string {
	b, err := AppendText(nil, n, 1<<20)
	if err != nil {
		return string(b) + "…"
	}
	return string(b)
}

// AppendText appends the text form of n to dst, failing with ErrTooLarge
// (and the partial text) once it would exceed limit bytes.
func AppendText(dst []byte, n Noun, limit int) ([]byte, error) {
	base := len(dst)
	// The stack holds what is still to print; a nil-cell entry with
	// v == closeMark stands for "]".
	type item struct {
		n     Noun
		close bool
		space bool
	}
	stack := []item{{n: n}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.space {
			dst = append(dst, ' ')
		}
		switch {
		case it.close:
			dst = append(dst, ']')
		case it.n.c == nil:
			dst = strconv.AppendUint(dst, it.n.v, 10)
		default:
			dst = append(dst, '[')
			stack = append(stack, item{close: true}, item{n: it.n.c.tail, space: true}, item{n: it.n.c.head})
		}
		if len(dst)-base > limit {
			return dst[:base+limit], ErrTooLarge
		}
	}
	return dst, nil
}

// Shape facts about a noun, counted as a tree (shared subtrees counted each
// time they appear), stopping early once a limit is crossed.
type Shape struct {
	Nodes int // atoms + pairs
	Depth int // 0 for an atom
}

// Measure walks n as a tree and returns its shape, or ErrTooLarge as soon as
// it has more than maxNodes nodes or is deeper than maxDepth.
func Measure(n Noun, maxNodes, maxDepth int) (Shape, error) {
	type item struct {
		n     Noun
		depth int
	}
	var s Shape
	stack := []item{{n, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		s.Nodes++
		if it.depth > s.Depth {
			s.Depth = it.depth
		}
		if s.Nodes > maxNodes || s.Depth > maxDepth {
			return s, ErrTooLarge
		}
		if it.n.c != nil {
			stack = append(stack, item{it.n.c.tail, it.depth + 1}, item{it.n.c.head, it.depth + 1})
		}
	}
	return s, nil
}

// AppendAtoms appends the atoms of n, left to right (the nox output order),
// failing with ErrTooLarge once more than max atoms would be produced.
func AppendAtoms(dst []uint64, n Noun, max int) ([]uint64, error) {
	base := len(dst)
	stack := []Noun{n}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.c == nil {
			if len(dst)-base >= max {
				return dst, ErrTooLarge
			}
			dst = append(dst, it.v)
			continue
		}
		stack = append(stack, it.c.tail, it.c.head)
	}
	return dst, nil
}

// Subject builds the nox subject of public inputs x1..xn: [xn [… [x1 0]]];
// no inputs give the atom 0. Values must be canonical.
func Subject(inputs []uint64) Noun {
	s := Zero
	for _, x := range inputs {
		s = Cons(Atom(x), s)
	}
	return s
}
