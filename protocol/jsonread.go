package protocol

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// reader turns tree values into Go values. Every failure is an *Error with
// the reader's code and the JSON path; values themselves are never echoed.
type reader struct{ code Code }

func (r reader) fail(path, format string, args ...any) error {
	return Errorf(r.code, "%s: "+format, append([]any{path}, args...)...)
}

func (r reader) want(v *jvalue, k jkind, path string) error {
	if v.kind != k {
		return r.fail(path, "must be %s, not %s", jkindNames[k], jkindNames[v.kind])
	}
	return nil
}

// object is an object being read: get marks keys as used so that rest can
// name what nobody asked for.
type object struct {
	r    reader
	path string
	v    *jvalue
	used []bool
}

func (r reader) object(v *jvalue, path string) (*object, error) {
	if err := r.want(v, jObject, path); err != nil {
		return nil, err
	}
	return &object{r: r, path: path, v: v, used: make([]bool, len(v.keys))}, nil
}

// get returns the value under key, or nil when the key is absent.
func (o *object) get(key string) *jvalue {
	for i, k := range o.v.keys {
		if k == key {
			o.used[i] = true
			return o.v.items[i]
		}
	}
	return nil
}

// has reports whether key is present without marking it used.
func (o *object) has(key string) bool {
	for _, k := range o.v.keys {
		if k == key {
			return true
		}
	}
	return false
}

// at is the path of a member.
func (o *object) at(key string) string { return o.path + "." + quoteKey(key) }

// need returns the value under key or fails when it is absent.
func (o *object) need(key string) (*jvalue, error) {
	v := o.get(key)
	if v == nil {
		return nil, o.r.fail(o.at(key), "required key is missing")
	}
	return v, nil
}

// closed fails on the first key that was never read: request parsers
// refuse what they do not understand.
func (o *object) closed() error {
	for i, u := range o.used {
		if !u {
			return o.r.fail(o.at(o.v.keys[i]), "unknown key")
		}
	}
	return nil
}

func (r reader) str(v *jvalue, path string) (string, error) {
	if err := r.want(v, jString, path); err != nil {
		return "", err
	}
	return v.str(), nil
}

// text is a string's value as bytes, sharing the tree's memory (the
// input's, when the string has no escapes): for values that are decoded
// further, such as base64, and never kept.
func (r reader) text(v *jvalue, path string) ([]byte, error) {
	if err := r.want(v, jString, path); err != nil {
		return nil, err
	}
	return v.text, nil
}

func (r reader) boolean(v *jvalue, path string) (bool, error) {
	if err := r.want(v, jBool, path); err != nil {
		return false, err
	}
	return v.b, nil
}

// u64 reads a u64 in the contract's form: a canonical decimal string.
func (r reader) u64(v *jvalue, path string) (uint64, error) {
	if v.kind == jNumber {
		return 0, r.fail(path, "must be a decimal string, not a JSON number")
	}
	if err := r.want(v, jString, path); err != nil {
		return 0, err
	}
	n, ok := parseDecimal(v.str())
	if !ok {
		return 0, r.fail(path, "not a canonical decimal u64 (digits only, no sign, no leading zeros)")
	}
	return n, nil
}

// u64Number reads a u64 written as a JSON number, the form of formats that
// are not ours (Trident's bundle, Joy's input file). Fractions, exponents
// and signs are refused; encoding/json already refuses leading zeros.
func (r reader) u64Number(v *jvalue, path string) (uint64, error) {
	if err := r.want(v, jNumber, path); err != nil {
		return 0, err
	}
	n, ok := parseDecimal(v.str())
	if !ok {
		return 0, r.fail(path, "not an unsigned integer below 2^64")
	}
	return n, nil
}

// fieldValue reads a canonical field element as a decimal string.
func (r reader) fieldValue(v *jvalue, path string) (uint64, error) {
	n, err := r.u64(v, path)
	if err != nil {
		return 0, err
	}
	if n >= field.P {
		return 0, r.fail(path, "not a canonical field element (must be below p)")
	}
	return n, nil
}

// array returns the elements of an array of at most max elements.
func (r reader) array(v *jvalue, path string, max int) ([]*jvalue, error) {
	if err := r.want(v, jArray, path); err != nil {
		return nil, err
	}
	if len(v.items) > max {
		return nil, r.fail(path, "%d elements, at most %d", len(v.items), max)
	}
	return v.items, nil
}

// fieldValues reads an array of canonical field elements.
func (r reader) fieldValues(v *jvalue, path string, max int) ([]uint64, error) {
	items, err := r.array(v, path, max)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, len(items))
	for i, it := range items {
		if out[i], err = r.fieldValue(it, index(path, i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// hex32 reads 64 lowercase hex digits.
func (r reader) hex32(v *jvalue, path string) ([32]byte, error) {
	var out [32]byte
	s, err := r.str(v, path)
	if err != nil {
		return out, err
	}
	if len(s) != 64 || !lowerHex(s) {
		return out, r.fail(path, "must be 64 lowercase hex digits")
	}
	_, _ = hex.Decode(out[:], []byte(s))
	return out, nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// base64Len checks that s can be standard padded base64 and returns the
// exact decoded length, so callers can refuse oversize blobs before
// decoding them.
func base64Len(s []byte) (int, bool) {
	if len(s)%4 != 0 {
		return 0, false
	}
	n := len(s) / 4 * 3
	if len(s) > 0 && s[len(s)-1] == '=' {
		n--
		if s[len(s)-2] == '=' {
			n--
		}
	}
	return n, true
}

// base64 decodes s into a new slice of exactly its size.
func (r reader) base64(s []byte, path string) ([]byte, error) {
	enc := base64.StdEncoding.Strict()
	b := make([]byte, enc.DecodedLen(len(s)))
	n, err := enc.Decode(b, s)
	if err != nil {
		return nil, r.fail(path, "not standard padded base64")
	}
	if n < len(b) {
		// Line breaks, which the decoder skips, made the estimate large.
		b = b[:n:n]
	}
	return b, nil
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// only fails on the first key outside known; checking names first means a
// misspelt key is reported as such rather than as a missing one.
func (o *object) only(known []string) error {
	for _, k := range o.v.keys {
		found := false
		for _, want := range known {
			if k == want {
				found = true
				break
			}
		}
		if !found {
			return o.r.fail(o.at(k), "unknown key")
		}
	}
	return nil
}
