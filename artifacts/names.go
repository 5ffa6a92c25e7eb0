package artifacts

import (
	"fmt"
	"strconv"
	"strings"
)

const (
	// MaxNameLen bounds one path component (a job id or an artifact name
	// component). It stays well below NAME_MAX so that the temp-file prefix
	// always fits.
	MaxNameLen = 128

	// MaxDepth bounds the number of components of an artifact name.
	MaxDepth = 8

	// tmpPrefix starts every temp file. Valid names never start with a dot,
	// so a temp file can never be read or published under a valid name.
	tmpPrefix = ".tmp-"
)

// ValidName reports whether s is a valid job id or artifact name component:
// 1 to MaxNameLen bytes of [A-Za-z0-9._-], not starting with a dot. The dot
// rule excludes "." and ".." and keeps the hidden namespace for temp files.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// splitName checks an artifact name and returns its components. A name is
// a relative slash-separated path of 1 to MaxDepth valid components; no
// empty component, no leading or trailing slash, no "." or "..".
func splitName(name string) ([]string, error) {
	if name == "" {
		return nil, fmt.Errorf("artifacts: empty name: %w", ErrUnsafePath)
	}
	if strings.HasPrefix(name, "/") {
		return nil, fmt.Errorf("artifacts: absolute name %q: %w", name, ErrUnsafePath)
	}
	comps := strings.Split(name, "/")
	if len(comps) > MaxDepth {
		return nil, fmt.Errorf("artifacts: name %q has more than %d components: %w", name, MaxDepth, ErrUnsafePath)
	}
	for _, c := range comps {
		if !ValidName(c) {
			return nil, fmt.Errorf("artifacts: name %q: invalid component %q: %w", name, c, ErrUnsafePath)
		}
	}
	return comps, nil
}

// attemptName is the directory name of an attempt: canonical decimal.
func attemptName(a uint32) string {
	return strconv.FormatUint(uint64(a), 10)
}

// parseAttempt accepts only what attemptName produces, so that "007" or
// "+7" left in a job directory is never mistaken for attempt 7.
func parseAttempt(s string) (uint32, bool) {
	if s == "" || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return uint32(v), true
}
