package artifacts

import (
	"errors"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	good := []string{"a", "job-1", "A.b_c-9", "x.", strings.Repeat("z", MaxNameLen), "cert.zst"}
	bad := []string{"", ".", "..", ".hidden", ".tmp-abc", "a/b", "/a", "a b", "a\x00", "é", "a\\b",
		strings.Repeat("z", MaxNameLen+1), "a:b", "*"}
	for _, s := range good {
		if !ValidName(s) {
			t.Errorf("ValidName(%q) = false, want true", s)
		}
	}
	for _, s := range bad {
		if ValidName(s) {
			t.Errorf("ValidName(%q) = true, want false", s)
		}
	}
}

func TestSplitName(t *testing.T) {
	good := map[string]int{"a": 1, "a/b": 2, "a/b/c.d": 3, strings.Repeat("d/", MaxDepth-1) + "f": MaxDepth}
	for s, n := range good {
		c, err := splitName(s)
		if err != nil || len(c) != n {
			t.Errorf("splitName(%q) = %v, %v; want %d components", s, c, err, n)
		}
	}
	bad := []string{"", "/", "/a", "a/", "a//b", "../a", "a/..", "a/../b", "./a", "a/./b", ".a",
		"a/.tmp-x", strings.Repeat("d/", MaxDepth) + "f", "a\x00b"}
	for _, s := range bad {
		if _, err := splitName(s); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("splitName(%q) error = %v, want ErrUnsafePath", s, err)
		}
	}
}

func TestParseAttempt(t *testing.T) {
	for _, a := range []uint32{0, 1, 9, 10, 4294967295} {
		got, ok := parseAttempt(attemptName(a))
		if !ok || got != a {
			t.Errorf("parseAttempt(attemptName(%d)) = %d, %v", a, got, ok)
		}
	}
	for _, s := range []string{"", "007", "00", "+1", "-1", "1a", "4294967296", "99999999999", " 1"} {
		if _, ok := parseAttempt(s); ok {
			t.Errorf("parseAttempt(%q) accepted", s)
		}
	}
}

func FuzzSplitName(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "/abs", "a//b", ".tmp-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		comps, err := splitName(s)
		if err != nil {
			if !errors.Is(err, ErrUnsafePath) {
				t.Fatalf("splitName(%q) error %v is not ErrUnsafePath", s, err)
			}
			return
		}
		if strings.Join(comps, "/") != s || len(comps) > MaxDepth {
			t.Fatalf("splitName(%q) = %q", s, comps)
		}
		for _, c := range comps {
			if c == "" || c[0] == '.' || strings.ContainsAny(c, "/\x00") {
				t.Fatalf("splitName(%q) accepted component %q", s, c)
			}
		}
	})
}
