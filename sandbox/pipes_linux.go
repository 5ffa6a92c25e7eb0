package sandbox

import (
	"context"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The worker's output pipes, as go-plugin reads them.

// A worker's output is read at most pipeRate bytes a second, after a
// first pipeBurst: beyond that the worker's writes wait for room in its
// pipe. A worker cannot make the supervisor spend a core on reading
// output (go-plugin reads stdout after the handshake only to discard
// it, and stderr goes to a debug log), and whatever reads the pipes
// sees at most that much. The handshake line, and the trace of a
// crashed worker, fit in the first burst.
const (
	pipeRate  = 1 << 20
	pipeBurst = 256 << 10
)

// pipeReader hands a worker pipe to go-plugin, copying into the caller's
// sink and remembering EOF so teardown can close it without cutting off a
// reader that is still draining.
type pipeReader struct {
	f       *os.File
	tee     io.Writer
	tail    *tailBuffer
	eof     chan struct{}
	eofOnce sync.Once
	limit   *rate.Limiter
	// closed ends a wait for the rate limit: Close cuts off the reader.
	closed context.Context
	cancel context.CancelFunc
}

func newPipeReader(f *os.File, tee io.Writer, tail *tailBuffer) *pipeReader {
	ctx, cancel := context.WithCancel(context.Background())
	return &pipeReader{f: f, tee: tee, tail: tail, eof: make(chan struct{}),
		limit: rate.NewLimiter(pipeRate, pipeBurst), closed: ctx, cancel: cancel}
}

func (p *pipeReader) Read(b []byte) (int, error) {
	if len(b) > pipeBurst {
		b = b[:pipeBurst]
	}
	n, err := p.f.Read(b)
	if n > 0 {
		if p.tail != nil {
			p.tail.Write(b[:n])
		}
		if p.tee != nil {
			_, _ = p.tee.Write(b[:n])
		}
		// Paid after the read, so the reader waits before the next
		// one; a Close meanwhile ends the wait, and the next read
		// fails.
		_ = p.limit.WaitN(p.closed, n)
	}
	if err != nil {
		p.eofOnce.Do(func() { close(p.eof) })
	}
	return n, err
}

func (p *pipeReader) Close() error {
	p.eofOnce.Do(func() { close(p.eof) })
	p.cancel()
	return p.f.Close()
}

func (p *pipeReader) closeAfterEOF(grace time.Duration) {
	select {
	case <-p.eof:
	case <-time.After(grace):
	}
	_ = p.Close()
}

// tailBuffer keeps the last bytes written to it, for Diagnose.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 4 << 10

func (t *tailBuffer) Write(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailMax {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailMax:]...)
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
