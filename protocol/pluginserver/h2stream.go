package pluginserver

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"golang.org/x/net/http2/hpack"
)

var (
	errStreamReset = errors.New("the client reset the stream")
	errConnClosed  = errors.New("the connection closed")
	errTooMuchData = errors.New("more request data than the call allows")
	errCallEnded   = errors.New("the call has ended")
)

// stream is one call: the request bytes the reader goroutine delivers, and
// the response side the handler writes.
type stream struct {
	c       *conn
	id      uint32
	cancel  context.CancelFunc
	maxRecv int // the largest request message of the call

	mu          sync.Mutex
	cond        *sync.Cond
	buf         []byte // received, not yet read
	eof         bool   // the client ended its side
	err         error  // reset, or the connection ended
	recvUnacked int64  // reader goroutine only

	// Guarded by c.wmu.
	sendWindow  int64
	headersSent bool
	ended       bool // END_STREAM sent
}

func newStream(c *conn, id uint32, cancel context.CancelFunc, maxRecv int) *stream {
	st := &stream{c: c, id: id, cancel: cancel, maxRecv: maxRecv}
	st.cond = sync.NewCond(&st.mu)
	c.wmu.Lock()
	st.sendWindow = c.peerInitWindow
	c.wmu.Unlock()
	return st
}

// push delivers request bytes; false when the call's bound is exceeded.
func (st *stream) push(p []byte) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err != nil || st.eof {
		return true // nobody reads them any more
	}
	// Unread bytes: at most one whole message and the frame after it.
	if len(st.buf)+len(p) > st.maxRecv+5+ourMaxFrameSize {
		return false
	}
	st.buf = append(st.buf, p...)
	st.cond.Broadcast()
	return true
}

// countReceived does the stream's receive flow control; it returns the
// window increment to send, if any.
func (st *stream) countReceived(n int64) int64 {
	st.recvUnacked += n
	if st.recvUnacked < recvWindow/2 {
		return 0
	}
	n, st.recvUnacked = st.recvUnacked, 0
	return n
}

func (st *stream) endRequest() {
	st.mu.Lock()
	st.eof = true
	st.cond.Broadcast()
	st.mu.Unlock()
}

// reset ends the call from the client's side or the connection's.
func (st *stream) reset(err error) {
	st.mu.Lock()
	if st.err == nil {
		st.err = err
	}
	st.cond.Broadcast()
	st.mu.Unlock()
	st.cancel()
	st.c.wmu.Lock()
	st.c.wcond.Broadcast()
	st.c.wmu.Unlock()
}

// handlerDone ends the call on our side: a reader still waiting for
// request bytes (Run's cancel watcher, when the client never half-closed)
// is woken with errCallEnded, and later frames for the stream are
// discarded. Once forgotten, the stream is out of reach of the client's
// RST_STREAM and of the connection's close, so this is the reader's only
// way out.
func (st *stream) handlerDone() {
	st.c.forget(st.id)
	st.reset(errCallEnded)
}

// readFull fills p from the request. It returns io.EOF if the client
// ended its side before any of p, io.ErrUnexpectedEOF inside p, and the
// stream's error after a reset.
func (st *stream) readFull(p []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	for len(st.buf) < len(p) && !st.eof && st.err == nil {
		st.cond.Wait()
	}
	switch {
	case len(st.buf) >= len(p):
		n := copy(p, st.buf)
		st.buf = st.buf[n:]
		if len(st.buf) == 0 {
			st.buf = nil
		}
		return nil
	case st.err != nil:
		return st.err
	case len(st.buf) == 0:
		return io.EOF
	default:
		return io.ErrUnexpectedEOF
	}
}

// send writes, in one flush, the response headers if they are not out
// yet, msg as one gRPC message when non-nil, and the trailers with status
// code when final. It waits for send window as flow control requires.
func (st *stream) send(msg []byte, final bool, code int, text string) error {
	c := st.c
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if st.ended {
		return errors.New("pluginserver: the call has ended")
	}
	b := c.wbuf[:0]
	defer func() { c.wbuf = b[:0] }()
	if msg == nil && final && !st.headersSent {
		// Trailers-Only: one HEADERS frame carries status and end.
		block := c.headerBlock(statusFields("200", code, text)...)
		b = c.appendHeaders(b, st.id, block, true)
		st.headersSent, st.ended = true, true
		return st.flush(b)
	}
	b = st.appendResponseHeaders(b)
	if msg != nil {
		data := make([]byte, 5, 5+len(msg))
		binary.BigEndian.PutUint32(data[1:], uint32(len(msg)))
		data = append(data, msg...)
		var err error
		if b, err = st.appendData(b, data); err != nil {
			return err
		}
	}
	if final {
		block := c.headerBlock(trailerFields(code, text)...)
		b = c.appendHeaders(b, st.id, block, true)
		st.ended = true
	}
	return st.flush(b)
}

// sendRaw writes body into the response as it is, after the response
// headers if they are not out yet: the caller frames its own messages.
func (st *stream) sendRaw(body []byte) error {
	c := st.c
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if st.ended {
		return errors.New("pluginserver: the call has ended")
	}
	b := c.wbuf[:0]
	defer func() { c.wbuf = b[:0] }()
	b = st.appendResponseHeaders(b)
	var err error
	if b, err = st.appendData(b, body); err != nil {
		return err
	}
	return st.flush(b)
}

// appendResponseHeaders appends the response headers unless they are
// out already. The caller holds c.wmu.
func (st *stream) appendResponseHeaders(b []byte) []byte {
	if st.headersSent {
		return b
	}
	block := st.c.headerBlock(hpack.HeaderField{Name: ":status", Value: "200"},
		hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
	st.headersSent = true
	return st.c.appendHeaders(b, st.id, block, false)
}

// appendData appends data to b as DATA frames, within the send windows:
// out of window, what is built goes out and it waits for more. The
// caller holds c.wmu.
func (st *stream) appendData(b, data []byte) ([]byte, error) {
	c := st.c
	for len(data) > 0 {
		if err := st.alive(); err != nil {
			return b, err
		}
		if c.sendWindow <= 0 || st.sendWindow <= 0 {
			if err := st.flush(b); err != nil {
				return b, err
			}
			b = b[:0]
			c.wcond.Wait()
			continue
		}
		n := int(min(int64(len(data)), c.sendWindow, st.sendWindow, int64(c.peerMaxFrame)))
		b = appendFrame(b, frameData, 0, st.id, data[:n])
		data = data[n:]
		c.sendWindow -= int64(n)
		st.sendWindow -= int64(n)
	}
	return b, nil
}

// alive reports the stream's or the connection's end. The caller holds
// c.wmu.
func (st *stream) alive() error {
	st.mu.Lock()
	err := st.err
	st.mu.Unlock()
	if err != nil {
		return err
	}
	if st.c.isClosed() {
		return errConnClosed
	}
	return nil
}

func (st *stream) flush(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := st.alive(); err != nil {
		return err
	}
	return st.c.flushLocked(b)
}
