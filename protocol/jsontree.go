package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// encoding/json keeps the last of two equal keys without a word, so a
// payload could mean one thing to this parser and another to the next. The
// contract's parsers therefore first read JSON into this small tree, which
// refuses duplicates at every depth, bounds depth and value count, and keeps
// numbers as their literal text; typed readers then walk the tree with the
// JSON path at hand for messages.

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
	kind  jkind
	b     bool
	s     string    // a string's value or a number's literal
	raw   []byte    // a jRaw value's JSON text
	items []*jvalue // array elements, or object values parallel to keys
	keys  []string
}

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

// treeFrame is an open array or object of decodeTree.
type treeFrame struct {
	v         *jvalue
	seen      map[string]struct{}
	expectKey bool
	key       string
}

func (f *treeFrame) seenKey(k string) bool {
	_, dup := f.seen[k]
	return dup
}

// decodeTree parses exactly one JSON value. Errors are *Error with the
// given code and say where, never what the offending content was.
func decodeTree(data []byte, lim treeLimits, code Code) (*jvalue, error) {
	type frame = treeFrame
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var (
		root   *jvalue
		stack  []*frame
		path   []pathElem
		values int
	)
	fail := func(format string, args ...any) (*jvalue, error) {
		return nil, Errorf(code, "%s: "+format, append([]any{renderPath(path)}, args...)...)
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if root == nil || len(stack) > 0 {
				return fail("malformed JSON: unexpected end of input")
			}
			return root, nil
		}
		if err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return fail("malformed JSON at byte %d", se.Offset)
			}
			return fail("malformed JSON")
		}
		if root != nil && len(stack) == 0 {
			return fail("malformed JSON: data after the value")
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.v.kind == jObject && top.expectKey {
			if key, ok := tok.(string); ok && len(stack) == 1 && lim.raw(key) && !top.seenKey(key) {
				// The member's value is read whole, as text.
				top.seen[key] = struct{}{}
				path = append(path, pathElem{key: key, isKey: true})
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					var se *json.SyntaxError
					if errors.As(err, &se) {
						return fail("malformed JSON at byte %d", se.Offset)
					}
					return fail("malformed JSON")
				}
				if values++; values > lim.maxValues {
					return fail("more than %d JSON values", lim.maxValues)
				}
				top.v.keys = append(top.v.keys, key)
				top.v.items = append(top.v.items, &jvalue{kind: jRaw, raw: raw})
				path = path[:len(path)-1]
				continue
			}
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(path) > 0 {
					path = path[:len(path)-1]
				}
				continue
			}
			key, _ := tok.(string)
			if _, dup := top.seen[key]; dup {
				path = append(path, pathElem{key: key, isKey: true})
				return fail("duplicate key")
			}
			top.seen[key] = struct{}{}
			top.key, top.expectKey = key, false
			continue
		}
		if d, ok := tok.(json.Delim); ok && d == ']' {
			stack = stack[:len(stack)-1]
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
			continue
		}
		values++
		if values > lim.maxValues {
			return fail("more than %d JSON values", lim.maxValues)
		}
		v := new(jvalue)
		switch t := tok.(type) {
		case nil:
			v.kind = jNull
		case bool:
			v.kind, v.b = jBool, t
		case json.Number:
			v.kind, v.s = jNumber, string(t)
		case string:
			v.kind, v.s = jString, t
		case json.Delim:
			if t == '{' {
				v.kind = jObject
			} else {
				v.kind = jArray
			}
		}
		// Attach to the parent, extending the path to the new value.
		switch {
		case top == nil:
			root = v
		case top.v.kind == jArray:
			path = append(path, pathElem{index: len(top.v.items)})
			top.v.items = append(top.v.items, v)
		default:
			path = append(path, pathElem{key: top.key, isKey: true})
			top.v.keys = append(top.v.keys, top.key)
			top.v.items = append(top.v.items, v)
			top.expectKey = true
		}
		if v.kind == jArray || v.kind == jObject {
			if len(stack)+1 > lim.maxDepth {
				return fail("nested deeper than %d", lim.maxDepth)
			}
			f := &frame{v: v, expectKey: v.kind == jObject}
			if v.kind == jObject {
				f.seen = make(map[string]struct{})
			}
			// An open container keeps its path element until it closes;
			// the root has none.
			stack = append(stack, f)
			continue
		}
		if top != nil {
			path = path[:len(path)-1]
		}
	}
}
