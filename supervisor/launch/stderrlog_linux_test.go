package launch

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// A worker's stderr adds at most stderrLogBytes to the supervisor's log,
// and one line saying the rest is dropped, however much it writes.
// (Before, every byte went to the log.)
func TestStderrLogIsBounded(t *testing.T) {
	wl := &workerLog{}
	var notes int
	s := &stderrLog{log: slog.New(&countingHandler{Handler: wl, count: func(r slog.Record) {
		if r.Message == "worker stderr: the rest is dropped" {
			notes++
		}
	}}), job: "j", attempt: 1}
	line := []byte(strings.Repeat("x", 1000) + "\n")
	for range 1000 { // ~1 MB
		if n, err := s.Write(line); n != len(line) || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	if got := len(wl.all()); got != stderrLogBytes {
		t.Errorf("%d bytes of stderr logged, want the first %d", got, stderrLogBytes)
	}
	if notes != 1 {
		t.Errorf("%d notes of the dropped rest, want 1", notes)
	}
}

// countingHandler passes records on and shows each to count.
type countingHandler struct {
	slog.Handler
	count func(slog.Record)
}

func (c *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	c.count(r)
	return c.Handler.Handle(ctx, r)
}

// workerLog collects the workers' stderr from the launcher's log.
type workerLog struct {
	mu   sync.Mutex
	text strings.Builder
}

func (w *workerLog) Enabled(context.Context, slog.Level) bool { return true }
func (w *workerLog) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *workerLog) WithGroup(string) slog.Handler            { return w }
func (w *workerLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "worker stderr" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "text" {
			w.mu.Lock()
			w.text.WriteString(a.Value.String())
			w.mu.Unlock()
		}
		return true
	})
	return nil
}

func (w *workerLog) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.text.String()
}
