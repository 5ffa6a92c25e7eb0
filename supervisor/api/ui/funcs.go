package ui

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// funcs are the templates' formatting helpers: times in UTC, durations
// and sizes as people read them, ids shortened, CLI arguments quoted.
var funcs = template.FuncMap{
	"ts":          stamp,
	"clock":       clock,
	"tsms":        func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") },
	"iso":         func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"dur":         human,
	"ms":          func(ms uint64) string { return human(time.Duration(ms) * time.Millisecond) },
	"ns":          func(ns int64) string { return human(time.Duration(ns)) },
	"between":     between,
	"bytes":       size,
	"short":       short,
	"sh":          shellQuote,
	"state":       stateClass,
	"terminal":    func(s lifecycle.State) bool { return s.Terminal() },
	"join":        strings.Join,
	"add":         func(a, b int) int { return a + b },
	"jobOf":       jobOfAttempt,
	"u64":         func(n int) uint64 { return uint64(n) },
	"nilList":     func(v []string) bool { return v == nil },
	"mul":         func(a, b uint64) int64 { return int64(a * b) },
	"clearCursor": func(f filters) string { f.Cursor = ""; return f.url() },
	"progClass":   progClass,
	"invClass":    invocationClass,
	"actName":     actName,
}

// actName is an act by its registered name, its tag where it has none.
func actName(names map[uint64]string, tag uint64) string {
	if n, ok := names[tag]; ok {
		return n
	}
	return strconv.FormatUint(tag, 10)
}

// progClass is the badge class of a prog's lifecycle state.
func progClass(s string) string {
	switch s {
	case "active":
		return "ok"
	case "paused", "retiring":
		return "warn"
	case "retired":
		return "off"
	}
	return "wait"
}

// invocationClass is the badge class of an invocation's status.
func invocationClass(s string) string {
	switch s {
	case "completed":
		return "ok"
	case "failed", "conflict":
		return "bad"
	case "running":
		return "run"
	case "cancelled":
		return "off"
	}
	return "wait"
}

// jobOfAttempt is the job of an attempt named JOB/N.
func jobOfAttempt(s string) string {
	if i := strings.LastIndexByte(s, '/'); i > 0 {
		return s[:i]
	}
	return s
}

// stamp is a time as the pages show it: UTC, to the second ("—": none).
func stamp(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// clock is a time of day (UTC), for times of today.
func clock(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("15:04:05")
}

// between is b-a, "—" when either is unset or b is before a.
func between(a, b time.Time) string {
	if a.IsZero() || b.IsZero() || b.Before(a) {
		return "—"
	}
	return human(b.Sub(a))
}

// human is a duration to two units at most: 850ms, 4.2s, 3m 07s, 2h 05m,
// 3d 4h.
func human(d time.Duration) string {
	switch {
	case d < 0:
		return "—"
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
}

// size is a byte count in binary units.
func size(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	suffix := "KMGTPE"[exp : exp+1]
	if v >= 100 || v == float64(uint64(v)) {
		return fmt.Sprintf("%.0f %siB", v, suffix)
	}
	return fmt.Sprintf("%.1f %siB", v, suffix)
}

// short is the first 12 characters of a long hex id (record ids, boots,
// digests); job ids are the submitter's and shown whole.
func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// shellQuote quotes an argument for a POSIX shell where it needs it, so
// that a shown command runs as shown.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=@,+", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stateClass is the badge class of a job or attempt state.
func stateClass(s lifecycle.State) string {
	switch s {
	case lifecycle.Accepted, lifecycle.Verified:
		return "ok"
	case lifecycle.Rejected, lifecycle.Failed:
		return "bad"
	case lifecycle.Unknown:
		return "warn"
	case lifecycle.Running, lifecycle.Produced:
		return "run"
	case lifecycle.Cancelled:
		return "off"
	}
	return "wait"
}
