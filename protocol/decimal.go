package protocol

import (
	"strconv"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// parseDecimal reads the canonical decimal form of a u64: "0" or a non-zero
// digit followed by digits, nothing else, at most 2^64−1. One spelling per
// number keeps JSON payloads comparable byte for byte.
func parseDecimal(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 20 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

// ParseU64 reads a canonical decimal u64.
func ParseU64(s string) (uint64, error) {
	v, ok := parseDecimal(s)
	if !ok {
		return 0, Errorf(CodeInvalidJob, "not a canonical decimal u64")
	}
	return v, nil
}

// ParseFieldValue reads a canonical decimal field element (< p). Values
// ≥ p are refused, never reduced.
func ParseFieldValue(s string) (uint64, error) {
	v, ok := parseDecimal(s)
	if !ok {
		return 0, Errorf(CodeInvalidJob, "not a canonical decimal u64")
	}
	if v >= field.P {
		return 0, Errorf(CodeInvalidJob, "not a canonical field element (must be below p)")
	}
	return v, nil
}

// ParseValues reads a comma-separated list of field values, the form of
// --input-values: "" is the empty list; no spaces, no empty items, no signs,
// no leading zeros, every value below p, at most MaxInputWords values.
// Messages name the position, never the value.
func ParseValues(s string) ([]uint64, error) {
	if s == "" {
		return []uint64{}, nil
	}
	if n := strings.Count(s, ",") + 1; n > MaxInputWords {
		return nil, Errorf(CodeInvalidJob, "%d values, at most %d", n, MaxInputWords)
	}
	var out []uint64
	for i := 0; ; i++ {
		item, rest, more := strings.Cut(s, ",")
		v, err := ParseFieldValue(item)
		if err != nil {
			return nil, Errorf(CodeInvalidJob, "the value at position %d (counting from 1): %s", i+1, AsError(err).Message)
		}
		out = append(out, v)
		if !more {
			return out, nil
		}
		s = rest
	}
}

// FormatValues is the inverse of ParseValues.
func FormatValues(vs []uint64) string {
	b := make([]byte, 0, len(vs)*8)
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, v, 10)
	}
	return string(b)
}
