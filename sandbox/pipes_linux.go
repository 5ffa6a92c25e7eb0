package sandbox

import (
	"io"
	"os"
	"sync"
	"time"
)

// The worker's output pipes, as go-plugin reads them.

// pipeReader hands a worker pipe to go-plugin, copying into the caller's
// sink and remembering EOF so teardown can close it without cutting off a
// reader that is still draining.
type pipeReader struct {
	f       *os.File
	tee     io.Writer
	tail    *tailBuffer
	eof     chan struct{}
	eofOnce sync.Once
}

func newPipeReader(f *os.File, tee io.Writer, tail *tailBuffer) *pipeReader {
	return &pipeReader{f: f, tee: tee, tail: tail, eof: make(chan struct{})}
}

func (p *pipeReader) Read(b []byte) (int, error) {
	n, err := p.f.Read(b)
	if n > 0 {
		if p.tail != nil {
			p.tail.Write(b[:n])
		}
		if p.tee != nil {
			_, _ = p.tee.Write(b[:n])
		}
	}
	if err != nil {
		p.eofOnce.Do(func() { close(p.eof) })
	}
	return n, err
}

func (p *pipeReader) Close() error {
	p.eofOnce.Do(func() { close(p.eof) })
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
