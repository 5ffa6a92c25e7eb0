package noun

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePrint(t *testing.T) {
	cases := []struct{ in, want string }{
		{"0", "0"},
		{"42", "42"},
		{"[1 2]", "[1 2]"},
		{"[1 2 3 4]", "[1 [2 [3 4]]]"},
		{"[[1 2] [3 4]]", "[[1 2] [3 4]]"},
		{" \t\r\n[ 1\n2 ]\n", "[1 2]"},
		{"1_000_000", "1000000"},
		{"18446744069414584321", "0"},          // p reads as 0
		{"18446744069414584324", "3"},          // p+3
		{"18446744073709551615", "4294967294"}, // 2^64-1
		{"18446744069414584320", "18446744069414584320"},
		{"00042", "42"},
		{"[5 [[0 2] [0 3]]]", "[5 [[0 2] [0 3]]]"},
	}
	for _, c := range cases {
		n, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got := n.String(); got != c.want {
			t.Errorf("Parse(%q) prints %q, want %q", c.in, got, c.want)
		}
		// Printing then parsing gives the same noun.
		again, err := Parse(n.String())
		if err != nil || !Equal(again, n) {
			t.Errorf("round trip of %q failed: %v", c.in, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		in       string
		line     int
		col      int
		contains string
	}{
		{"", 1, 1, "empty"},
		{"[]", 1, 1, "at least two"},
		{"[1]", 1, 1, "at least two"},
		{"[1 2", 1, 1, "unclosed"},
		{"1 2", 1, 3, "after the expression"},
		{"[1 2]]", 1, 6, "after the expression"},
		{"]", 1, 1, "unmatched"},
		{"[1 x]", 1, 4, "unexpected"},
		{"[1 -2]", 1, 4, "unexpected"},
		{"123456789012345678901", 1, 1, "more than 20 digits"},
		{"18446744073709551616", 1, 1, "exceeds"},
		{"1_", 1, 2, "separate"},
		{"[1\n  2\n  ?]", 3, 3, "unexpected"},
		{"_1", 1, 1, "unexpected"},
	}
	for _, c := range cases {
		_, err := Parse(c.in)
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v, want a SyntaxError", c.in, err)
			continue
		}
		if se.Line != c.line || se.Col != c.col || !strings.Contains(se.Msg, c.contains) {
			t.Errorf("Parse(%q): %v; want %d:%d containing %q", c.in, err, c.line, c.col, c.contains)
		}
	}
}

func TestCanonicalLiterals(t *testing.T) {
	opt := ParseOptions{Literals: CanonicalLiterals}
	if _, err := ParseWith("[1 18446744069414584320]", opt); err != nil {
		t.Fatalf("p-1 must be accepted: %v", err)
	}
	for _, in := range []string{"18446744069414584321", "[1 18446744073709551615]"} {
		if _, err := ParseWith(in, opt); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseWith(%q) = %v, want rejection", in, err)
		}
	}
}

func TestNestingAndNodeLimits(t *testing.T) {
	deep := func(n int) string {
		return strings.Repeat("[1 ", n) + "0" + strings.Repeat("]", n)
	}
	if _, err := Parse(deep(MaxNesting)); err != nil {
		t.Fatalf("nesting %d must parse: %v", MaxNesting, err)
	}
	if _, err := Parse(deep(MaxNesting + 1)); !errors.Is(err, ErrSyntax) {
		t.Fatalf("nesting %d must fail, got %v", MaxNesting+1, err)
	}
	if _, err := ParseWith("[1 2 3]", ParseOptions{MaxNodes: 4}); !errors.Is(err, ErrSyntax) {
		t.Fatalf("node limit not enforced: %v", err)
	}
	if _, err := ParseWith("[1 2 3]", ParseOptions{MaxNodes: 5}); err != nil {
		t.Fatalf("5 nodes within limit 5: %v", err)
	}
}

func TestTokens(t *testing.T) {
	a, _ := Parse("[5 [[0 2] [0 3]] 7]")
	b, _ := Parse("[5 [[[0 2] [0 3]] 7]]")
	ta, tb := AppendTokens(nil, a), AppendTokens(nil, b)
	if string(ta) != string(tb) {
		t.Fatal("n-ary spelling changed the token encoding")
	}
	n, used, err := DecodeTokens(ta, 100, 100)
	if err != nil || used != len(ta) || n.String() != a.String() {
		t.Fatalf("decode: %v %d %s", err, used, n)
	}
	for cut := 0; cut < len(ta); cut++ {
		if _, _, err := DecodeTokens(ta[:cut], 100, 100); !errors.Is(err, ErrTokens) {
			t.Fatalf("truncation at %d accepted", cut)
		}
	}
	bad := append([]byte{TokenAtom}, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff) // p
	if _, _, err := DecodeTokens(bad, 10, 10); !errors.Is(err, ErrTokens) {
		t.Fatal("non-canonical token accepted")
	}
	if _, _, err := DecodeTokens(ta, 3, 100); !errors.Is(err, ErrTokens) {
		t.Fatal("node limit not enforced")
	}
}

func TestMeasureAtomsSubject(t *testing.T) {
	n, _ := Parse("[[1 2] [3 [4 5]]]")
	s, err := Measure(n, 100, 100)
	if err != nil || s.Nodes != 9 || s.Depth != 3 {
		t.Fatalf("Measure = %+v, %v", s, err)
	}
	if _, err := Measure(n, 8, 100); !errors.Is(err, ErrTooLarge) {
		t.Fatal("node bound ignored")
	}
	if _, err := Measure(n, 100, 2); !errors.Is(err, ErrTooLarge) {
		t.Fatal("depth bound ignored")
	}
	atoms, err := AppendAtoms(nil, n, 10)
	if err != nil || len(atoms) != 5 || atoms[0] != 1 || atoms[4] != 5 {
		t.Fatalf("atoms %v %v", atoms, err)
	}
	if _, err := AppendAtoms(nil, n, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatal("atom bound ignored")
	}
	if got := Subject([]uint64{3, 5}).String(); got != "[5 [3 0]]" {
		t.Fatalf("Subject = %s", got)
	}
	if got := Subject(nil).String(); got != "0" {
		t.Fatalf("Subject() = %s", got)
	}
}

func TestAppendTextBound(t *testing.T) {
	// A DAG of 64 shared levels has a text form of ~2^64 bytes.
	n := Atom(1)
	for range 64 {
		n = Cons(n, n)
	}
	out, err := AppendText(nil, n, 1000)
	if !errors.Is(err, ErrTooLarge) || len(out) != 1000 {
		t.Fatalf("bounded print: %d bytes, %v", len(out), err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "[1 2]", "[1 2 3]", "[5 [[0 2] [0 3]]]", "1_0", "[[1 2] 0]", "18446744073709551615", "[", "]", "[1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseWith(s, ParseOptions{MaxNodes: 1 << 16})
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error not a SyntaxError: %v", err)
			}
			return
		}
		text := n.String()
		again, err := Parse(text)
		if err != nil || again.String() != text {
			t.Fatalf("print/parse round trip failed for %q: %v", s, err)
		}
		toks := AppendTokens(nil, n)
		back, used, err := DecodeTokens(toks, 1<<17, 1<<17)
		if err != nil || used != len(toks) || back.String() != text {
			t.Fatalf("token round trip failed for %q: %v", s, err)
		}
	})
}

// TestCheckTokensAgreesWithDecode: CheckTokens accepts exactly what
// DecodeTokens accepts, with the same length, on every truncation and
// single-byte change of a few encodings and under tight bounds.
func TestCheckTokensAgreesWithDecode(t *testing.T) {
	for _, src := range []string{"0", "[1 2]", "[5 [[0 2] [0 3]] 7]", "[[[1 2] [3 4]] [[5 6] [7 [8 9]]]]"} {
		n, _ := Parse(src)
		good := AppendTokens(nil, n)
		var inputs [][]byte
		for cut := 0; cut <= len(good); cut++ {
			inputs = append(inputs, good[:cut])
		}
		for i := range good {
			for _, x := range []byte{0x01, 0x02, 0x80, 0xff} {
				b := append([]byte(nil), good...)
				b[i] ^= x
				inputs = append(inputs, b)
			}
		}
		for _, b := range inputs {
			for _, lim := range [][2]int{{100, 100}, {3, 100}, {100, 1}, {100, 2}} {
				_, used, derr := DecodeTokens(b, lim[0], lim[1])
				cused, cerr := CheckTokens(b, lim[0], lim[1])
				if (derr == nil) != (cerr == nil) || (derr == nil && used != cused) {
					t.Fatalf("%x under %v: decode %d %v, check %d %v", b, lim, used, derr, cused, cerr)
				}
			}
		}
	}
}
