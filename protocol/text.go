package protocol

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxTextBytes bounds identifiers and descriptive text fields.
const MaxTextBytes = 128

// ValidText reports whether s is 1..128 bytes of printable ASCII (space
// included). Narrow text keeps identifiers comparable byte for byte and
// harmless in logs and file names.
func ValidText(s string) bool {
	if len(s) == 0 || len(s) > MaxTextBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// ValidName reports whether s is a job id or artifact name: 1..128 bytes of
// [A-Za-z0-9._-] not starting with a dot, so it can be a file name in a
// sandbox directory and can never be "." or "..".
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxTextBytes || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// SafeMessage makes text from an untrusted party fit for a log line: valid
// UTF-8, no control characters, at most MaxMessageBytes.
func SafeMessage(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			r = '?'
		}
		if b.Len()+utf8.RuneLen(r) > MaxMessageBytes {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// quoteKey renders a JSON key for a message: plain when it is a simple
// identifier, otherwise quoted and cut short, since keys are caller text.
func quoteKey(k string) string {
	simple := k != ""
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			simple = false
			break
		}
	}
	if simple && len(k) <= 64 {
		return k
	}
	return QuotePrefix(k)
}

// QuotePrefix renders caller text for a message: quoted and escaped, and
// cut to its first 32 bytes and "…" when longer, so that no message grows
// with its input (a 100,000-byte job id comes back as 40-odd bytes).
func QuotePrefix(s string) string {
	if len(s) > 32 {
		s = s[:32] + "…"
	}
	return strconv.Quote(s)
}
