package protocol

import (
	"strings"
	"testing"
)

func TestParseDecimal(t *testing.T) {
	good := map[string]uint64{"0": 0, "1": 1, "42": 42, "18446744073709551615": 1<<64 - 1}
	for s, want := range good {
		if v, ok := parseDecimal(s); !ok || v != want {
			t.Errorf("parseDecimal(%q) = %d, %v", s, v, ok)
		}
	}
	for _, s := range []string{"", "01", "00", "-1", "+1", " 1", "1 ", "1.0", "1e3", "0x10",
		"18446744073709551616", "99999999999999999999", "١"} {
		if _, ok := parseDecimal(s); ok {
			t.Errorf("parseDecimal(%q) accepted", s)
		}
	}
}

func TestParseFieldValue(t *testing.T) {
	if v, err := ParseFieldValue("18446744069414584320"); err != nil || v != 18446744069414584320 {
		t.Errorf("p-1: %d %v", v, err)
	}
	_, err := ParseFieldValue("18446744069414584321")
	wantCode(t, err, CodeInvalidJob, "below p")
}

func TestParseValues(t *testing.T) {
	got, err := ParseValues("1,2,3")
	if err != nil || FormatValues(got) != "1,2,3" {
		t.Fatalf("ParseValues: %v %v", got, err)
	}
	if got, err := ParseValues(""); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
	bad := map[string]string{
		"1,,2":                   "position 2 ",
		"1,2,":                   "position 3 ",
		"1, 2":                   "position 2 ",
		"01":                     "position 1 ",
		"-1":                     "position 1 ",
		"1.5":                    "position 1 ",
		"18446744069414584321":   "below p",
		"3,18446744073709551615": "position 2 ",
	}
	for in, want := range bad {
		_, err := ParseValues(in)
		wantCode(t, err, CodeInvalidJob, want)
	}
	_, err = ParseValues(strings.Repeat("1,", MaxInputWords) + "1")
	wantCode(t, err, CodeInvalidJob, "at most")
}
