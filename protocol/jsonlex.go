package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
)

// lexer reads JSON tokens in place: what it returns is a slice of data
// unless the token had to be rewritten (a string with escapes or
// non-ASCII bytes). It accepts exactly what encoding/json accepts, and a
// rewritten string is rewritten by encoding/json itself.
type lexer struct {
	data []byte
	pos  int
}

// syntaxError is a lexer failure: the input ended (end) or its byte at
// offset cannot be there.
type syntaxError struct {
	offset int
	end    bool
}

func (e *syntaxError) Error() string {
	if e.end {
		return "unexpected end of JSON input"
	}
	return "invalid character"
}

func (l *lexer) errAt(i int) error {
	if i >= len(l.data) {
		return &syntaxError{offset: len(l.data), end: true}
	}
	return &syntaxError{offset: i}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (l *lexer) skipSpace() {
	for l.pos < len(l.data) && isSpace(l.data[l.pos]) {
		l.pos++
	}
}

// startsValue reports whether a JSON value can begin with c.
func startsValue(c byte) bool {
	switch c {
	case '{', '[', '"', '-', 't', 'f', 'n':
		return true
	}
	return c >= '0' && c <= '9'
}

// plainByte marks the bytes a string may hold as they are: printable
// ASCII but the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// string reads the string at pos (its opening quote) and returns its
// value: a slice of data when it holds only plain bytes, else the value
// encoding/json decodes (escapes resolved, invalid UTF-8 replaced).
func (l *lexer) string() ([]byte, error) {
	start := l.pos
	i := start + 1
	plain := true
	for {
		for i < len(l.data) && plainByte[l.data[i]] {
			i++
		}
		if i >= len(l.data) {
			return nil, l.errAt(i)
		}
		switch c := l.data[i]; {
		case c == '"':
			l.pos = i + 1
			if plain {
				return l.data[start+1 : i], nil
			}
			var s string
			if err := json.Unmarshal(l.data[start:i+1], &s); err != nil {
				return nil, l.errAt(start)
			}
			return []byte(s), nil
		case c == '\\':
			plain = false
			if i+1 >= len(l.data) {
				return nil, l.errAt(i + 1)
			}
			switch l.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= len(l.data) || !isHex(l.data[k]) {
						return nil, l.errAt(k)
					}
				}
				i += 6
			default:
				return nil, l.errAt(i + 1)
			}
		case c < 0x20:
			return nil, l.errAt(i)
		default: // a byte of a multi-byte sequence, or invalid UTF-8
			plain = false
			i++
		}
	}
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number reads the number at pos: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (l *lexer) number() ([]byte, error) {
	start, i := l.pos, l.pos
	if l.data[i] == '-' {
		i++
	}
	switch {
	case i >= len(l.data):
		return nil, l.errAt(i)
	case l.data[i] == '0':
		i++
	case isDigit(l.data[i]):
		for i < len(l.data) && isDigit(l.data[i]) {
			i++
		}
	default:
		return nil, l.errAt(i)
	}
	digits := func() error {
		if i >= len(l.data) || !isDigit(l.data[i]) {
			return l.errAt(i)
		}
		for i < len(l.data) && isDigit(l.data[i]) {
			i++
		}
		return nil
	}
	if i < len(l.data) && l.data[i] == '.' {
		i++
		if err := digits(); err != nil {
			return nil, err
		}
	}
	if i < len(l.data) && (l.data[i] == 'e' || l.data[i] == 'E') {
		i++
		if i < len(l.data) && (l.data[i] == '+' || l.data[i] == '-') {
			i++
		}
		if err := digits(); err != nil {
			return nil, err
		}
	}
	l.pos = i
	return l.data[start:i], nil
}

// literal reads true, false or null at pos.
func (l *lexer) literal() (b, isNull bool, err error) {
	rest := l.data[l.pos:]
	for _, lit := range []struct {
		text         string
		value, isNul bool
	}{{"true", true, false}, {"false", false, false}, {"null", false, true}} {
		if bytes.HasPrefix(rest, []byte(lit.text)) {
			l.pos += len(lit.text)
			return lit.value, lit.isNul, nil
		}
		if len(rest) < len(lit.text) && len(rest) > 0 && bytes.HasPrefix([]byte(lit.text), rest) {
			return false, false, l.errAt(len(l.data))
		}
	}
	// The first byte that differs from every literal.
	i := l.pos
	for _, lit := range []string{"true", "false", "null"} {
		n := 0
		for n < len(lit) && l.pos+n < len(l.data) && l.data[l.pos+n] == lit[n] {
			n++
		}
		i = max(i, l.pos+n)
	}
	return false, false, l.errAt(i)
}

// skipValue returns the JSON text of the value at pos, checked by
// encoding/json, and moves past it. Its end is found first by strings
// and brackets alone; what lies between is then validated whole.
func (l *lexer) skipValue() ([]byte, error) {
	start := l.pos
	end, ok := l.valueEnd(start)
	if !ok {
		return nil, l.errAt(len(l.data))
	}
	raw := l.data[start:end]
	if json.Valid(raw) {
		l.pos = end
		return raw, nil
	}
	var v struct{}
	var se *json.SyntaxError
	if err := json.Unmarshal(raw, &v); len(raw) > 0 && errors.As(err, &se) {
		return nil, l.errAt(start + int(se.Offset))
	}
	return nil, l.errAt(start)
}

// valueEnd is where the value that starts at start ends, judged by its
// strings and brackets only; false when the input ends first.
func (l *lexer) valueEnd(start int) (int, bool) {
	depth := 0
	for i := start; i < len(l.data); {
		switch c := l.data[i]; {
		case c == '"':
			if i = l.stringEnd(i); i > len(l.data) {
				return 0, false
			}
		case c == '{' || c == '[':
			depth++
			i++
			continue
		case c == '}' || c == ']':
			if depth == 0 {
				return i, true // the enclosing object's end
			}
			depth--
			i++
		case depth == 0 && (c == ',' || isSpace(c)):
			return i, true
		default:
			i++
			continue
		}
		if depth == 0 {
			return i, true
		}
	}
	return len(l.data), depth == 0
}

// stringEnd is the index after the closing quote of the string that
// starts at i, or len(data)+1 when it has none.
func (l *lexer) stringEnd(i int) int {
	for i++; i < len(l.data); i++ {
		switch l.data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(l.data) + 1
}
