package protocol

import (
	"strconv"
	"strings"
)

// encoding/json keeps the last of two equal keys without a word, so a
// payload could mean one thing to this parser and another to the next. The
// contract's parsers therefore first read JSON into this small tree, which
// refuses duplicates at every depth, bounds depth and value count, and keeps
// numbers as their literal text; typed readers then walk the tree with the
// JSON path at hand for messages.
//
// The tree is read in place (jsonlex.go): a string without escapes and a
// number keep their bytes as a slice of the input, which the tree must
// not outlive, so that a job spec's base64 artifact (up to 48 MiB) is
// decoded straight from the request's bytes. encoding/json's Decoder,
// used before, buffered the whole input once more and copied each
// string again: a spec cost about five times its size before its
// artifact was decoded (docs/supervisor.md, "A verify job's bytes").

type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
	// jRaw is a member of the root object kept as its JSON text (see
	// treeLimits.rawMembers): syntax-checked here, read by another parser.
	jRaw
)

var jkindNames = [...]string{"null", "a boolean", "a number", "a string", "an array", "an object", "raw JSON"}

type jvalue struct {
	kind jkind
	b    bool
	// text is a string's value or a number's literal; for jRaw, the
	// value's JSON text. It may share the input's memory.
	text  []byte
	items []*jvalue // array elements, or object values parallel to keys
	keys  []string
}

// str is a string's value (or a number's literal) as a Go string: a copy.
func (v *jvalue) str() string { return string(v.text) }

// treeLimits bound what decodeTree builds: nesting and the number of
// values (every scalar, array and object counts one).
type treeLimits struct {
	maxDepth  int
	maxValues int
	// rawMembers names members of the root object that are kept as JSON
	// text, checked for syntax only, because their own parser reads them
	// strictly (an envelope's job spec is Admit's): building a tree of
	// them here would parse a 48 MiB spec twice. They count as one value.
	rawMembers []string
}

func (l treeLimits) raw(key string) bool {
	for _, k := range l.rawMembers {
		if k == key {
			return true
		}
	}
	return false
}

// pathElem is one step of a JSON path: an object key or an array index.
type pathElem struct {
	key   string
	index int
	isKey bool
}

func renderPath(elems []pathElem) string {
	var b strings.Builder
	b.WriteByte('$')
	for _, e := range elems {
		if e.isKey {
			b.WriteByte('.')
			b.WriteString(quoteKey(e.key))
		} else {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// frameState is what an open array or object expects next.
type frameState uint8

const (
	wantFirstKey  frameState = iota // after '{': a key or '}'
	wantKey                         // after ',' in an object
	wantColon                       // after a key
	wantMember                      // after ':': the member's value
	wantFirstItem                   // after '[': a value or ']'
	wantItem                        // after ',' in an array
	wantNext                        // after a value: ',' or the closer
)

// treeFrame is an open array or object of decodeTree.
type treeFrame struct {
	v     *jvalue
	seen  map[string]struct{}
	key   string
	state frameState
}

func (f *treeFrame) seenKey(k string) bool {
	_, dup := f.seen[k]
	return dup
}

// treeDecoder is one run of decodeTree.
type treeDecoder struct {
	lexer
	lim    treeLimits
	code   Code
	stack  []*treeFrame
	path   []pathElem
	values int
}

// decodeTree parses exactly one JSON value. Errors are *Error with the
// given code and say where, never what the offending content was. The
// tree shares data's memory: data must not change while it is read.
func decodeTree(data []byte, lim treeLimits, code Code) (*jvalue, error) {
	d := &treeDecoder{lexer: lexer{data: data}, lim: lim, code: code}
	return d.decode()
}

func (d *treeDecoder) fail(format string, args ...any) error {
	return Errorf(d.code, "%s: "+format, append([]any{renderPath(d.path)}, args...)...)
}

// malformed is the error of a syntax error at the lexer's position: the
// input ends too soon, or its byte there cannot be.
func (d *treeDecoder) malformed() error {
	if d.pos >= len(d.data) {
		return d.fail("malformed JSON: unexpected end of input")
	}
	return d.fail("malformed JSON at byte %d", d.pos)
}

func (d *treeDecoder) decode() (*jvalue, error) {
	var root *jvalue
	for {
		d.skipSpace()
		if len(d.stack) == 0 {
			if root == nil {
				if d.pos == len(d.data) {
					return nil, d.malformed()
				}
				v, err := d.value(nil)
				if err != nil {
					return nil, err
				}
				root = v
				continue
			}
			switch {
			case d.pos == len(d.data):
				return root, nil
			case startsValue(d.data[d.pos]):
				return nil, d.fail("malformed JSON: data after the value")
			}
			return nil, d.malformed()
		}
		if d.pos == len(d.data) {
			return nil, d.malformed()
		}
		top := d.stack[len(d.stack)-1]
		c := d.data[d.pos]
		var err error
		switch top.state {
		case wantFirstKey, wantKey:
			switch {
			case c == '}' && top.state == wantFirstKey:
				d.pos++
				d.close()
			case c == '"':
				err = d.key(top)
			default:
				err = d.malformed()
			}
		case wantColon:
			if c != ':' {
				return nil, d.malformed()
			}
			d.pos++
			top.state = wantMember
		case wantMember:
			if len(d.stack) == 1 && d.lim.raw(top.key) {
				err = d.rawMember(top)
			} else {
				_, err = d.value(top)
			}
		case wantFirstItem, wantItem:
			if c == ']' && top.state == wantFirstItem {
				d.pos++
				d.close()
			} else {
				_, err = d.value(top)
			}
		case wantNext:
			object := top.v.kind == jObject
			switch {
			case c == ',' && object:
				d.pos++
				top.state = wantKey
			case c == ',':
				d.pos++
				top.state = wantItem
			case c == '}' && object, c == ']' && !object:
				d.pos++
				d.close()
			default:
				err = d.malformed()
			}
		}
		if err != nil {
			return nil, err
		}
	}
}

// key reads an object's key, refusing one it already has.
func (d *treeDecoder) key(top *treeFrame) error {
	raw, err := d.string()
	if err != nil {
		return d.lexError(err)
	}
	key := string(raw)
	if top.seenKey(key) {
		d.path = append(d.path, pathElem{key: key, isKey: true})
		return d.fail("duplicate key")
	}
	top.seen[key] = struct{}{}
	top.key, top.state = key, wantColon
	return nil
}

// value reads the value at the lexer's position and attaches it to
// parent (nil: it is the root), extending the path to it; an array or
// object is left open on the stack.
func (d *treeDecoder) value(parent *treeFrame) (*jvalue, error) {
	v := new(jvalue)
	switch c := d.data[d.pos]; {
	case c == '{':
		d.pos++
		v.kind = jObject
	case c == '[':
		d.pos++
		v.kind = jArray
	case c == '"':
		s, err := d.string()
		if err != nil {
			return nil, d.lexError(err)
		}
		v.kind, v.text = jString, s
	case c == '-' || c >= '0' && c <= '9':
		n, err := d.number()
		if err != nil {
			return nil, d.lexError(err)
		}
		v.kind, v.text = jNumber, n
	default:
		b, isNull, err := d.literal()
		if err != nil {
			return nil, d.lexError(err)
		}
		v.kind, v.b = jBool, b
		if isNull {
			v.kind = jNull
		}
	}
	if d.values++; d.values > d.lim.maxValues {
		return nil, d.fail("more than %d JSON values", d.lim.maxValues)
	}
	// Attach to the parent, extending the path to the new value.
	switch {
	case parent == nil:
	case parent.v.kind == jArray:
		d.path = append(d.path, pathElem{index: len(parent.v.items)})
		parent.v.items = append(parent.v.items, v)
		parent.state = wantNext
	default:
		d.path = append(d.path, pathElem{key: parent.key, isKey: true})
		parent.v.keys = append(parent.v.keys, parent.key)
		parent.v.items = append(parent.v.items, v)
		parent.state = wantNext
	}
	if v.kind == jArray || v.kind == jObject {
		if len(d.stack)+1 > d.lim.maxDepth {
			return nil, d.fail("nested deeper than %d", d.lim.maxDepth)
		}
		f := &treeFrame{v: v, state: wantFirstItem}
		if v.kind == jObject {
			f.seen, f.state = make(map[string]struct{}), wantFirstKey
		}
		// An open container keeps its path element until it closes;
		// the root has none.
		d.stack = append(d.stack, f)
		return v, nil
	}
	if parent != nil {
		d.path = d.path[:len(d.path)-1]
	}
	return v, nil
}

// close ends the innermost open array or object.
func (d *treeDecoder) close() {
	d.stack = d.stack[:len(d.stack)-1]
	if len(d.path) > 0 {
		d.path = d.path[:len(d.path)-1]
	}
}

// rawMember reads the value of a raw member of the root object as its
// JSON text, checked for syntax only.
func (d *treeDecoder) rawMember(top *treeFrame) error {
	d.path = append(d.path, pathElem{key: top.key, isKey: true})
	raw, err := d.skipValue()
	if err != nil {
		return d.lexError(err)
	}
	if d.values++; d.values > d.lim.maxValues {
		return d.fail("more than %d JSON values", d.lim.maxValues)
	}
	top.v.keys = append(top.v.keys, top.key)
	top.v.items = append(top.v.items, &jvalue{kind: jRaw, text: raw})
	top.state = wantNext
	d.path = d.path[:len(d.path)-1]
	return nil
}

// lexError is the error of a failed read of the lexer.
func (d *treeDecoder) lexError(err error) error {
	if se, ok := err.(*syntaxError); ok && !se.end {
		return d.fail("malformed JSON at byte %d", se.offset)
	}
	return d.fail("malformed JSON: unexpected end of input")
}
