package noun

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// Limits of the text syntax, matching the reference CLI.
const (
	MaxNesting = 4096 // bracket nesting
	MaxDigits  = 20   // decimal digits in one literal
)

// ErrSyntax is matched (errors.Is) by every parse error.
var ErrSyntax = errors.New("nox syntax error")

// SyntaxError says what is wrong and where.
type SyntaxError struct {
	Offset int // byte offset of the offending token
	Line   int // 1-based
	Col    int // 1-based, in bytes
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("nox syntax error at %d:%d (byte %d): %s", e.Line, e.Col, e.Offset, e.Msg)
}

func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// LiteralMode says what the parser does with a literal ≥ p.
type LiteralMode uint8

const (
	// ReduceLiterals reduces literals mod p, like the reference parser.
	ReduceLiterals LiteralMode = iota
	// CanonicalLiterals rejects literals ≥ p: protocol boundaries never
	// reduce silently.
	CanonicalLiterals
)

// ParseOptions tune Parse. The zero value is the reference behaviour.
type ParseOptions struct {
	Literals   LiteralMode
	MaxNesting int // 0 means MaxNesting
	MaxNodes   int // 0 means unlimited; counts atoms and pairs of the tree
	Heap       *Heap
}

// Parse reads exactly one noun from src; anything after it but whitespace is
// an error.
func Parse(src string) (Noun, error) { return ParseWith(src, ParseOptions{}) }

// ParseWith is Parse with options.
func ParseWith(src string, opt ParseOptions) (Noun, error) {
	p := parser{src: src, opt: opt}
	if p.opt.MaxNesting <= 0 {
		p.opt.MaxNesting = MaxNesting
	}
	if p.opt.Heap == nil {
		p.opt.Heap = new(Heap)
	}
	return p.run()
}

type parser struct {
	src   string
	pos   int
	opt   ParseOptions
	nodes int
	// items holds the elements of every open bracket, innermost last;
	// starts[i] is where open bracket i begins in items.
	items  []Noun
	starts []int
	opens  []int // byte offset of each open bracket, for messages
}

func (p *parser) fail(off int, format string, args ...any) error {
	line, col := 1, 1
	for i := 0; i < off && i < len(p.src); i++ {
		if p.src[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return &SyntaxError{Offset: off, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *parser) count(off int) error {
	p.nodes++
	if p.opt.MaxNodes > 0 && p.nodes > p.opt.MaxNodes {
		return p.fail(off, "more than %d nodes", p.opt.MaxNodes)
	}
	return nil
}

func (p *parser) run() (Noun, error) {
	var (
		result Noun
		done   bool
	)
	for {
		for p.pos < len(p.src) && isSpace(p.src[p.pos]) {
			p.pos++
		}
		if p.pos == len(p.src) {
			break
		}
		off := p.pos
		if done {
			return Noun{}, p.fail(off, "unexpected %s after the expression", describe(p.src, off))
		}
		var n Noun
		switch c := p.src[off]; {
		case c == '[':
			if len(p.starts) >= p.opt.MaxNesting {
				return Noun{}, p.fail(off, "brackets nested deeper than %d", p.opt.MaxNesting)
			}
			p.starts = append(p.starts, len(p.items))
			p.opens = append(p.opens, off)
			p.pos++
			continue
		case c == ']':
			if len(p.starts) == 0 {
				return Noun{}, p.fail(off, "unmatched ']'")
			}
			start := p.starts[len(p.starts)-1]
			elems := p.items[start:]
			if len(elems) < 2 {
				return Noun{}, p.fail(p.opens[len(p.opens)-1], "a bracket needs at least two elements, found %d", len(elems))
			}
			// [a b c] is [a [b c]]: fold from the right.
			n = elems[len(elems)-1]
			for i := len(elems) - 2; i >= 0; i-- {
				if err := p.count(off); err != nil {
					return Noun{}, err
				}
				n = p.opt.Heap.Cons(elems[i], n)
			}
			p.items = p.items[:start]
			p.starts = p.starts[:len(p.starts)-1]
			p.opens = p.opens[:len(p.opens)-1]
			p.pos++
		case c >= '0' && c <= '9':
			v, err := p.literal()
			if err != nil {
				return Noun{}, err
			}
			if err := p.count(off); err != nil {
				return Noun{}, err
			}
			n = Atom(v)
		default:
			return Noun{}, p.fail(off, "unexpected %s", describe(p.src, off))
		}
		if len(p.starts) == 0 {
			result, done = n, true
		} else {
			p.items = append(p.items, n)
		}
	}
	if len(p.starts) > 0 {
		return Noun{}, p.fail(p.opens[len(p.opens)-1], "unclosed '['")
	}
	if !done {
		return Noun{}, p.fail(len(p.src), "empty input")
	}
	return result, nil
}

// literal reads a decimal number with optional '_' separators between
// digits.
func (p *parser) literal() (uint64, error) {
	start := p.pos
	var (
		v      uint64
		digits int
	)
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '_' {
			p.pos++
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		digits++
		if digits > MaxDigits {
			return 0, p.fail(start, "literal has more than %d digits", MaxDigits)
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, p.fail(start, "literal %s exceeds 2^64-1", p.src[start:p.end(start)])
		}
		v = v*10 + d
		p.pos++
	}
	if p.src[p.pos-1] == '_' {
		return 0, p.fail(p.pos-1, "'_' must separate digits")
	}
	if v >= field.P {
		if p.opt.Literals == CanonicalLiterals {
			return 0, p.fail(start, "literal %s is not a canonical field element (≥ p)", p.src[start:p.pos])
		}
		v = field.Reduce(v)
	}
	return v, nil
}

func (p *parser) end(start int) int {
	i := start
	for i < len(p.src) && (p.src[i] == '_' || (p.src[i] >= '0' && p.src[i] <= '9')) {
		i++
	}
	return i
}

func describe(src string, off int) string {
	c := src[off]
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return strconv.Quote(string(c))
}
