package protocol

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestDecodeTree(t *testing.T) {
	lim := treeLimits{maxDepth: 4, maxValues: 20}
	bad := map[string]string{
		`{"a":1,"a":2}`:                 "$.a: duplicate key",
		`{"a":{"b":1,"b":1}}`:           "$.a.b: duplicate key",
		`{"a":[{"c":1},{"c":1,"c":2}]}`: "$.a[1].c: duplicate key",
		`{"a\u0062":1,"ab":2}`:          "$.ab: duplicate key",
		`{"x y":1,"x y":1}`:             `$."x y": duplicate key`,
		`[[[[[1]]]]]`:                   "nested deeper than 4",
		`[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]`: "more than 20 JSON values",
		`{"a":1} {"b":2}`: "data after the value",
		`{"a":1}x`:        "malformed JSON",
		`{"a":1`:          "unexpected end",
		``:                "unexpected end",
		`{"a":01}`:        "malformed JSON",
		`{'a':1}`:         "malformed JSON",
	}
	for in, want := range bad {
		_, err := decodeTree([]byte(in), lim, CodeInvalidJob)
		if err == nil {
			t.Errorf("%s: accepted", in)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	v, err := decodeTree([]byte(` {"a":[1,"x",null,true,{}],"b":{"c":-1.5e3}} `), lim, CodeInvalidJob)
	if err != nil {
		t.Fatal(err)
	}
	if v.kind != jObject || len(v.keys) != 2 || v.items[0].items[1].str() != "x" || v.items[1].items[0].str() != "-1.5e3" {
		t.Fatalf("tree: %+v", v)
	}
}

// Raw members are kept as text at the root only; everywhere else the tree
// is built and checked.
func TestDecodeTreeRawMembers(t *testing.T) {
	lim := treeLimits{maxDepth: 4, maxValues: 8, rawMembers: []string{"spec"}}
	v, err := decodeTree([]byte(`{"spec": {"x":[1,2,3,4,5,6,7,8,9],"x":0} ,"n":1}`), lim, CodeInvalidJob)
	if err != nil {
		t.Fatal(err)
	}
	if v.items[0].kind != jRaw || string(v.items[0].text) != `{"x":[1,2,3,4,5,6,7,8,9],"x":0}` || v.items[1].str() != "1" {
		t.Fatalf("tree: %+v", v)
	}
	for in, want := range map[string]string{
		`{"a":{"spec":{"x":1,"x":2}}}`: "$.a.spec.x: duplicate key",
		`{"spec":1,"spec":2}`:          "$.spec: duplicate key",
		`{"spec":{"x":}}`:              "$.spec: malformed JSON",
		`{"spec":}`:                    "$.spec: malformed JSON",
	} {
		if _, err := decodeTree([]byte(in), lim, CodeInvalidJob); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// FuzzDecodeTree holds decodeTree, which reads its input in place, to
// the answers of the encoding/json Decoder it replaced
// (decodeTreeReference): the same trees for what both accept, the same
// refusals, with the same message for all but syntax errors, which
// both call malformed JSON (their byte offsets may differ).
func FuzzDecodeTree(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,"x",null,true,{}],"b":{"c":-1.5e3}}`, `{"spec": {"x":[1,2],"x":0} ,"n":1}`,
		`{"a":1,"a":2}`, `[[[[[1]]]]]`, `{"a":1} {"b":2}`, `{"a":1}x`, `{"a":01}`, `"\u00e9\ud83d\ude00"`,
		`{"spec":{"x":}}`, `{"spec":}`, `{"spec":"a\"b}","n":[1e5,-0.5E-3]}`, "\"\xff\xfe\"", `{"a\u0062":1,"ab":2}`,
		`[1,]`, `{"a":1,}`, `[tru]`, `{"spec":1x}`, ` {"spec" : [1, {"a":"}"}] } `, `{"spec":{"a":1]}`, `-`, `1.`, `1e+`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		lim := treeLimits{maxDepth: 5, maxValues: 40}
		if raw {
			lim.rawMembers = []string{"spec"}
		}
		got, gerr := decodeTree(data, lim, CodeInvalidJob)
		want, werr := decodeTreeReference(data, lim, CodeInvalidJob)
		switch {
		case (gerr == nil) != (werr == nil):
			t.Fatalf("%q: %v, the reference %v", data, gerr, werr)
		case gerr != nil:
			g, w := AsError(gerr), AsError(werr)
			if g.Code != w.Code {
				t.Fatalf("%q: %v, the reference %v", data, gerr, werr)
			}
			if !strings.Contains(w.Message, "malformed JSON") && g.Message != w.Message ||
				strings.Contains(w.Message, "malformed JSON") && !strings.Contains(g.Message, "malformed JSON") {
				t.Fatalf("%q: %v, the reference %v", data, gerr, werr)
			}
		case !sameTree(got, want):
			t.Fatalf("%q: another tree than the reference's", data)
		}
	})
}

func sameTree(a, b *jvalue) bool {
	if a.kind != b.kind || a.b != b.b || !bytes.Equal(a.text, b.text) || len(a.items) != len(b.items) || !slices.Equal(a.keys, b.keys) {
		return false
	}
	for i := range a.items {
		if !sameTree(a.items[i], b.items[i]) {
			return false
		}
	}
	return true
}
