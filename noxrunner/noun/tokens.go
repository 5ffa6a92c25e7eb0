package noun

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// The canonical token encoding of a noun (program identity): a pre-order
// walk where a pair emits TokenPair and then its head and tail, and an atom
// emits TokenAtom followed by its value as u64 little-endian. Two spellings
// of one tree ([a b c] and [a [b c]]) have one encoding.
const (
	TokenAtom byte = 0x00
	TokenPair byte = 0x01
)

// ErrTokens is matched by every token decoding error.
var ErrTokens = errors.New("invalid noun token encoding")

// AppendTokens appends the canonical token encoding of n.
func AppendTokens(dst []byte, n Noun) []byte {
	stack := []Noun{n}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.c == nil {
			dst = append(dst, TokenAtom)
			dst = binary.LittleEndian.AppendUint64(dst, it.v)
			continue
		}
		dst = append(dst, TokenPair)
		stack = append(stack, it.c.tail, it.c.head)
	}
	return dst
}

// DecodeTokens reads one noun from its canonical token encoding and returns
// it with the number of bytes consumed. Atom values must be canonical; the
// tree may have at most maxNodes nodes and depth maxDepth.
func DecodeTokens(b []byte, maxNodes, maxDepth int) (Noun, int, error) {
	// Each open pair waits for two children; pending counts the children
	// still owed at each level.
	type frame struct {
		head    Noun
		hasHead bool
	}
	var (
		stack []frame
		pos   int
		nodes int
	)
	for {
		if pos >= len(b) {
			return Noun{}, pos, fmt.Errorf("%w: truncated at byte %d", ErrTokens, pos)
		}
		nodes++
		if nodes > maxNodes {
			return Noun{}, pos, fmt.Errorf("%w: more than %d nodes", ErrTokens, maxNodes)
		}
		var n Noun
		switch b[pos] {
		case TokenPair:
			pos++
			if len(stack) >= maxDepth {
				return Noun{}, pos, fmt.Errorf("%w: deeper than %d", ErrTokens, maxDepth)
			}
			stack = append(stack, frame{})
			continue
		case TokenAtom:
			if len(b)-pos < 9 {
				return Noun{}, pos, fmt.Errorf("%w: truncated atom at byte %d", ErrTokens, pos)
			}
			v := binary.LittleEndian.Uint64(b[pos+1:])
			if v >= field.P {
				return Noun{}, pos, fmt.Errorf("%w: non-canonical atom at byte %d", ErrTokens, pos)
			}
			pos += 9
			n = Atom(v)
		default:
			return Noun{}, pos, fmt.Errorf("%w: unknown token 0x%02x at byte %d", ErrTokens, b[pos], pos)
		}
		// Attach n to the innermost open pair, closing pairs as they fill.
		for {
			if len(stack) == 0 {
				return n, pos, nil
			}
			top := &stack[len(stack)-1]
			if !top.hasHead {
				top.head, top.hasHead = n, true
				break
			}
			n = Cons(top.head, n)
			stack = stack[:len(stack)-1]
		}
	}
}

// CheckTokens validates a canonical token encoding as DecodeTokens does
// (canonical atoms, at most maxNodes nodes, depth at most maxDepth) and
// returns the number of bytes the noun takes, without building it.
func CheckTokens(b []byte, maxNodes, maxDepth int) (int, error) {
	// open[i] reports whether the i-th open pair has its head already.
	var open []bool
	pos, nodes := 0, 0
	for {
		if pos >= len(b) {
			return pos, fmt.Errorf("%w: truncated at byte %d", ErrTokens, pos)
		}
		if nodes++; nodes > maxNodes {
			return pos, fmt.Errorf("%w: more than %d nodes", ErrTokens, maxNodes)
		}
		switch b[pos] {
		case TokenPair:
			pos++
			if len(open) >= maxDepth {
				return pos, fmt.Errorf("%w: deeper than %d", ErrTokens, maxDepth)
			}
			open = append(open, false)
			continue
		case TokenAtom:
			if len(b)-pos < 9 {
				return pos, fmt.Errorf("%w: truncated atom at byte %d", ErrTokens, pos)
			}
			if binary.LittleEndian.Uint64(b[pos+1:]) >= field.P {
				return pos, fmt.Errorf("%w: non-canonical atom at byte %d", ErrTokens, pos)
			}
			pos += 9
		default:
			return pos, fmt.Errorf("%w: unknown token 0x%02x at byte %d", ErrTokens, b[pos], pos)
		}
		// A finished node completes the pairs whose tail it was.
		for {
			if len(open) == 0 {
				return pos, nil
			}
			if !open[len(open)-1] {
				open[len(open)-1] = true
				break
			}
			open = open[:len(open)-1]
		}
	}
}
