package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Flag values that check themselves when they are set, so that a bad
// value is a usage error (exit 2) before anything else happens. Each
// prints no "(default …)" of its own when unset: the flag's help says
// what the default is.

// enumValue is one of a fixed set of words.
type enumValue struct {
	value   string
	allowed []string
}

func newEnum(def string, allowed ...string) *enumValue {
	return &enumValue{value: def, allowed: allowed}
}

func (e *enumValue) String() string { return e.value }
func (e *enumValue) Type() string   { return strings.Join(e.allowed, "|") }
func (e *enumValue) Set(s string) error {
	for _, a := range e.allowed {
		if s == a {
			e.value = s
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", s, strings.Join(e.allowed, ", "))
}

// sizeValue is a byte size such as 64MiB (0: unset).
type sizeValue struct{ bytes uint64 }

func (v *sizeValue) String() string {
	if v.bytes == 0 {
		return ""
	}
	return protocol.FormatBytes(v.bytes)
}
func (v *sizeValue) Type() string { return "SIZE" }
func (v *sizeValue) Set(s string) error {
	b, err := protocol.ParseBytes(s)
	if err != nil {
		return err
	}
	v.bytes = b
	return nil
}

// limitDuration is a wall-clock limit: a whole number of milliseconds,
// at least 1 ms, at most maxLimitDuration (0: unset). "0s", "500us" and
// negative values are refused rather than read as "no limit" or wrapped.
type limitDuration struct{ d time.Duration }

// maxLimitDuration keeps every limit far from time.Duration's overflow.
const maxLimitDuration = 10 * 365 * 24 * time.Hour

// tooLongDuration reports whether s is written as time.ParseDuration
// reads a duration ([sign] number unit, repeated) although the parse
// refused it: it overflowed time.Duration (some 292 years), so it is too
// long, not malformed, and is said so.
func tooLongDuration(s string) bool {
	s = strings.TrimLeft(s, "+-")
	if s == "" {
		return false
	}
	for s != "" {
		n := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if n <= 0 || strings.Count(s[:n], ".") > 1 || s[:n] == "." {
			return false
		}
		s = s[n:]
		unit := ""
		for _, u := range []string{"ns", "us", "µs", "μs", "ms", "s", "m", "h"} {
			if strings.HasPrefix(s, u) && len(u) > len(unit) {
				unit = u
			}
		}
		if unit == "" {
			return false
		}
		s = s[len(unit):]
	}
	return true
}

func (v *limitDuration) String() string {
	if v.d == 0 {
		return ""
	}
	return v.d.String()
}
func (v *limitDuration) Type() string { return "DURATION" }
func (v *limitDuration) Set(s string) error {
	d, err := parseLimitDuration(s)
	if err != nil {
		return err
	}
	v.d = d
	return nil
}

// parseDuration is time.ParseDuration with the CLI's two refusals: too
// long (tooLongDuration), or not a duration at all, shown examples.
func parseDuration(s, examples string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil && tooLongDuration(s):
		return 0, fmt.Errorf("%q: at most %s", s, maxLimitDuration)
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration such as %s", s, examples)
	}
	return d, nil
}

func parseLimitDuration(s string) (time.Duration, error) {
	d, err := parseDuration(s, "500ms, 5s or 1h")
	switch {
	case err != nil:
		return 0, err
	case d <= 0:
		return 0, fmt.Errorf("%q: a limit must be positive (leave the flag out for the default)", s)
	case d%time.Millisecond != 0:
		return 0, fmt.Errorf("%q: limits are whole milliseconds", s)
	case d > maxLimitDuration:
		return 0, fmt.Errorf("%q: at most %s", s, maxLimitDuration)
	}
	return d, nil
}

// retentionValue is a positive duration, whole seconds (0: unset).
type retentionValue struct{ d time.Duration }

func (v *retentionValue) String() string {
	if v.d == 0 {
		return ""
	}
	return v.d.String()
}
func (v *retentionValue) Type() string { return "DURATION" }
func (v *retentionValue) Set(s string) error {
	d, err := parseDuration(s, "90m, 24h or 720h")
	switch {
	case err != nil:
		return err
	case d < time.Second:
		return fmt.Errorf("%q: at least 1s", s)
	case d > maxLimitDuration:
		return fmt.Errorf("%q: at most %s", s, maxLimitDuration)
	}
	v.d = d
	return nil
}

// intRange is an integer within [min, max]; set reports whether it was
// given (the default is then the flag's own rule, e.g. "the slots").
type intRange struct {
	v        int
	set      bool
	min, max int
}

func (v *intRange) String() string {
	if !v.set {
		return ""
	}
	return strconv.Itoa(v.v)
}
func (v *intRange) Type() string { return "N" }
func (v *intRange) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	if n < int64(v.min) || n > int64(v.max) {
		return fmt.Errorf("%d is out of range %d..%d", n, v.min, v.max)
	}
	v.v, v.set = int(n), true
	return nil
}

// budgetValue is a reduction budget: a whole number from 1 to p-1 (the
// contract's limits.reductions is a field element).
type budgetValue struct{ n uint64 }

func (v *budgetValue) String() string { return strconv.FormatUint(v.n, 10) }
func (v *budgetValue) Type() string   { return "N" }
func (v *budgetValue) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 || n >= field.P {
		return fmt.Errorf("%q is not a budget: a whole number of reductions from 1 to %d", s, field.P-1)
	}
	v.n = n
	return nil
}

// or returns the value, or def when the flag was not given.
func (v *intRange) or(def int) int {
	if v.set {
		return v.v
	}
	return def
}

func newIntRange(min, max int) *intRange { return &intRange{min: min, max: max} }

var (
	_ pflag.Value = (*enumValue)(nil)
	_ pflag.Value = (*sizeValue)(nil)
	_ pflag.Value = (*limitDuration)(nil)
	_ pflag.Value = (*retentionValue)(nil)
	_ pflag.Value = (*intRange)(nil)
	_ pflag.Value = (*budgetValue)(nil)
)

// priorityRange bounds --priority to the store's int32.
func priorityRange() *intRange { return newIntRange(math.MinInt32, math.MaxInt32) }
