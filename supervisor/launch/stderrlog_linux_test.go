package launch

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/workerlogtest"
)

// A worker's stderr adds at most stderrLogBytes to the supervisor's log,
// and one line saying the rest is dropped, however much it writes.
// (Before, every byte went to the log.)
func TestStderrLogIsBounded(t *testing.T) {
	wl := &workerlogtest.Collector{}
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
	if got := len(wl.All()); got != stderrLogBytes {
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
