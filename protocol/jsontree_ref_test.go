package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// referenceFrame is an open array or object of decodeTreeReference.
type referenceFrame struct {
	v         *jvalue
	seen      map[string]struct{}
	expectKey bool
	key       string
}

func (f *referenceFrame) seenKey(k string) bool {
	_, dup := f.seen[k]
	return dup
}

// decodeTreeReference is decodeTree as it was before it read its input
// in place: on encoding/json's Decoder, which copies. FuzzDecodeTree
// holds the two to the same answers.
func decodeTreeReference(data []byte, lim treeLimits, code Code) (*jvalue, error) {
	type frame = referenceFrame
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
				top.v.items = append(top.v.items, &jvalue{kind: jRaw, text: raw})
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
			v.kind, v.text = jNumber, []byte(t)
		case string:
			v.kind, v.text = jString, []byte(t)
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
