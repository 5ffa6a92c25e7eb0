package ui

import (
	"testing"
	"time"
)

// TestPagesParse: every page's templates parse with the helpers they
// name (a template error would otherwise surface as the daemon's panic
// at start).
func TestPagesParse(t *testing.T) {
	p := mustParsePages(func(args string) string { return "cyber-supervisor " + args })
	for _, name := range pageNames {
		if p.set[name].Lookup("content") == nil {
			t.Errorf("page %s has no content template", name)
		}
	}
}

func TestFormats(t *testing.T) {
	for d, want := range map[time.Duration]string{
		850 * time.Millisecond: "850ms", 4200 * time.Millisecond: "4.2s", 187 * time.Second: "3m 07s",
		125 * time.Minute: "2h 05m", 76 * time.Hour: "3d 4h", -time.Second: "—",
	} {
		if got := human(d); got != want {
			t.Errorf("human(%v) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[uint64]string{512: "512 B", 64 << 20: "64 MiB", 1536: "1.5 KiB", 3 << 30: "3 GiB"} {
		if got := size(n); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
	}
	for s, want := range map[string]string{"job-1.a": "job-1.a", "it's": `'it'\''s'`, "": "''", "a b": "'a b'"} {
		if got := shellQuote(s); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", s, got, want)
		}
	}
	now := time.Date(2026, 12, 6, 18, 0, 0, 0, time.UTC)
	for s, want := range map[string]time.Time{
		"2h": now.Add(-2 * time.Hour), "2026-12-06 17:00": time.Date(2026, 12, 6, 17, 0, 0, 0, time.UTC),
		"2026-12-06T17:00": time.Date(2026, 12, 6, 17, 0, 0, 0, time.UTC), "2026-12-06": time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC),
	} {
		if got, err := parseWhen(s, now); err != nil || !got.Equal(want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := parseWhen("yesterday", now); err == nil {
		t.Error("parseWhen(yesterday): no error")
	}
}
