// Package workerlogtest collects what workers write to stderr, as the
// launcher logs it, for tests to read. It is its own package, not part of
// supervisor/launch/launchtest, because launch's internal tests use it and
// launchtest imports launch.
package workerlogtest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitLimit bounds WaitText and WaitStep: a worker that never writes must
// fail the test, not hang it.
const waitLimit = 30 * time.Second

// Collector is a slog.Handler that keeps the text of every "worker
// stderr" record (the launcher's log of a worker's stderr) and drops the
// rest. It is safe for concurrent use.
type Collector struct {
	mu   sync.Mutex
	text strings.Builder
}

func (c *Collector) Enabled(context.Context, slog.Level) bool { return true }
func (c *Collector) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *Collector) WithGroup(string) slog.Handler            { return c }

func (c *Collector) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "worker stderr" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "text" {
			c.mu.Lock()
			c.text.WriteString(a.Value.String())
			c.mu.Unlock()
		}
		return true
	})
	return nil
}

// All returns the workers' stderr collected so far.
func (c *Collector) All() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.text.String()
}

// Steps returns the results the hostile worker (internal/hostileworker)
// reported for step in its "hostile: STEP: RESULT" lines, in order.
func (c *Collector) Steps(step string) []string {
	var out []string
	for _, l := range strings.Split(c.All(), "\n") {
		if r, ok := strings.CutPrefix(l, "hostile: "+step+": "); ok {
			out = append(out, r)
		}
	}
	return out
}

// WaitText waits until the workers' stderr contains sub.
func (c *Collector) WaitText(t testing.TB, sub string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(c.All(), sub) {
		if time.Now().After(deadline) {
			t.Fatalf("no worker wrote %q; stderr so far:\n%s", sub, c.All())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitStep waits until a worker reported step and returns its results.
func (c *Collector) WaitStep(t testing.TB, step string) []string {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if r := c.Steps(step); len(r) > 0 {
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no worker reported %q; stderr so far:\n%s", step, c.All())
	return nil
}
