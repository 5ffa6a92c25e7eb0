package pluginserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2/hpack"
)

// conn is one HTTP/2 connection from a gRPC client. One goroutine reads
// and dispatches frames; a handler goroutine is started only for methods
// that are served (a call answered Unimplemented is answered inline). All
// writes go through wmu, which also guards the HPACK encoder and the send
// windows, so that header blocks reach the wire in encoding order.
type conn struct {
	srv *Server
	nc  net.Conn
	br  *bufio.Reader

	mu      sync.Mutex
	streams map[uint32]*stream
	lastID  uint32
	closed  bool

	wmu            sync.Mutex
	wcond          *sync.Cond // send window grew, or the conn closed
	bw             *bufio.Writer
	wbuf           []byte
	henc           *hpack.Encoder
	hbuf           bytes.Buffer
	sendWindow     int64  // connection send window
	peerInitWindow int64  // peer's SETTINGS_INITIAL_WINDOW_SIZE
	peerMaxFrame   uint32 // peer's SETTINGS_MAX_FRAME_SIZE

	recvUnacked int64 // connection-level bytes received since the last WINDOW_UPDATE

	hdec *hpack.Decoder
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{srv: s, nc: nc, br: bufio.NewReaderSize(nc, 16<<10), streams: map[uint32]*stream{},
		bw: bufio.NewWriterSize(nc, 16<<10), sendWindow: defaultWindowSize,
		peerInitWindow: defaultWindowSize, peerMaxFrame: defaultMaxFrameSize}
	c.wcond = sync.NewCond(&c.wmu)
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.hdec = hpack.NewDecoder(4096, nil)
	c.hdec.SetMaxStringLength(ourMaxHeaderBlock)
	return c
}

// Our receive windows start at the largest allowed and are topped up
// whenever half is used: the only client is the supervisor, and message
// sizes are bounded per call instead (see stream.push).
const recvWindow = maxWindowSize

func (c *conn) serve() {
	defer c.close()
	var preface [len(clientPreface)]byte
	if _, err := io.ReadFull(c.br, preface[:]); err != nil || string(preface[:]) != clientPreface {
		return
	}
	settings := binary.BigEndian.AppendUint16(nil, settingMaxConcurrentStreams)
	settings = binary.BigEndian.AppendUint32(settings, ourMaxConcurrentStreams)
	settings = binary.BigEndian.AppendUint16(settings, settingInitialWindowSize)
	settings = binary.BigEndian.AppendUint32(settings, recvWindow)
	settings = binary.BigEndian.AppendUint16(settings, settingMaxFrameSize)
	settings = binary.BigEndian.AppendUint32(settings, ourMaxFrameSize)
	settings = binary.BigEndian.AppendUint16(settings, settingMaxHeaderListSize)
	settings = binary.BigEndian.AppendUint32(settings, ourMaxHeaderBlock)
	c.writeFrames(func(b []byte) []byte {
		b = appendFrame(b, frameSettings, 0, 0, settings)
		return appendFrame(b, frameWindowUpdate, 0, 0, binary.BigEndian.AppendUint32(nil, recvWindow-defaultWindowSize))
	})
	var buf []byte
	for {
		fh, p, nbuf, err := readFrame(c.br, buf, ourMaxFrameSize)
		buf = nbuf
		if err == nil {
			err = c.handleFrame(fh, p)
		}
		if err != nil {
			var ce connError
			if errors.As(err, &ce) {
				c.goAway(ce.code)
			}
			c.close()
			return
		}
	}
}

func (c *conn) handleFrame(fh frameHeader, p []byte) error {
	switch fh.typ {
	case frameSettings:
		return c.handleSettings(fh, p)
	case framePing:
		if fh.streamID != 0 || len(p) != 8 {
			return connError{errCodeProtocol, "bad PING"}
		}
		if fh.flags&flagAck == 0 {
			c.writeFrames(func(b []byte) []byte { return appendFrame(b, framePing, flagAck, 0, p) })
		}
	case frameWindowUpdate:
		if len(p) != 4 {
			return connError{errCodeFrameSize, "bad WINDOW_UPDATE"}
		}
		inc := int64(binary.BigEndian.Uint32(p) & (1<<31 - 1))
		c.wmu.Lock()
		if fh.streamID == 0 {
			c.sendWindow += inc
		} else if st := c.stream(fh.streamID); st != nil {
			st.sendWindow += inc
		}
		c.wcond.Broadcast()
		c.wmu.Unlock()
	case frameHeaders:
		return c.handleHeaders(fh, p)
	case frameData:
		return c.handleData(fh, p)
	case frameRSTStream:
		if fh.streamID == 0 || len(p) != 4 {
			return connError{errCodeProtocol, "bad RST_STREAM"}
		}
		if st := c.stream(fh.streamID); st != nil {
			st.reset(errStreamReset)
		}
	case frameGoAway:
		return io.EOF // the client is leaving; its calls end with it
	case frameContinuation:
		return connError{errCodeProtocol, "CONTINUATION without HEADERS"}
	case framePushPromise:
		return connError{errCodeProtocol, "PUSH_PROMISE from a client"}
	}
	// PRIORITY and unknown frame types are ignored.
	return nil
}

func (c *conn) handleSettings(fh frameHeader, p []byte) error {
	if fh.streamID != 0 {
		return connError{errCodeProtocol, "SETTINGS on a stream"}
	}
	if fh.flags&flagAck != 0 {
		return nil
	}
	if len(p)%6 != 0 {
		return connError{errCodeFrameSize, "bad SETTINGS"}
	}
	c.wmu.Lock()
	for ; len(p) > 0; p = p[6:] {
		id, v := binary.BigEndian.Uint16(p), binary.BigEndian.Uint32(p[2:])
		switch id {
		case settingHeaderTableSize:
			c.henc.SetMaxDynamicTableSizeLimit(v)
		case settingInitialWindowSize:
			if v > maxWindowSize {
				c.wmu.Unlock()
				return connError{errCodeFlowControl, "initial window too large"}
			}
			delta := int64(v) - c.peerInitWindow
			c.peerInitWindow = int64(v)
			c.mu.Lock()
			for _, st := range c.streams {
				st.sendWindow += delta
			}
			c.mu.Unlock()
		case settingMaxFrameSize:
			if v < defaultMaxFrameSize || v > 1<<24-1 {
				c.wmu.Unlock()
				return connError{errCodeProtocol, "bad max frame size"}
			}
			c.peerMaxFrame = v
		}
	}
	c.wcond.Broadcast()
	c.wmu.Unlock()
	c.writeFrames(func(b []byte) []byte { return appendFrame(b, frameSettings, flagAck, 0, nil) })
	return nil
}

// handleHeaders starts a call. Trailers from a client (a second HEADERS on
// a stream) are not part of gRPC and end the stream's request side.
func (c *conn) handleHeaders(fh frameHeader, p []byte) error {
	id := fh.streamID
	if id == 0 {
		return connError{errCodeProtocol, "HEADERS on stream 0"}
	}
	p, err := stripPadding(fh, p)
	if err != nil {
		return err
	}
	if fh.flags&flagPriority != 0 {
		if len(p) < 5 {
			return connError{errCodeProtocol, "short HEADERS"}
		}
		p = p[5:]
	}
	block := append([]byte(nil), p...)
	for fh.flags&flagEndHeaders == 0 {
		fh2, next, _, err := readFrame(c.br, nil, ourMaxFrameSize)
		if err != nil {
			return err
		}
		if fh2.typ != frameContinuation || fh2.streamID != id {
			return connError{errCodeProtocol, "HEADERS not followed by its CONTINUATION"}
		}
		if len(block)+len(next) > ourMaxHeaderBlock {
			return connError{errCodeEnhanceYourCalm, "header block too large"}
		}
		block = append(block, next...)
		fh.flags |= fh2.flags & flagEndHeaders
	}
	fields, err := c.decodeHeaders(block)
	if err != nil {
		return err
	}
	if st := c.stream(id); st != nil {
		st.endRequest()
		return nil
	}
	c.mu.Lock()
	if id%2 == 0 || id <= c.lastID {
		c.mu.Unlock()
		return connError{errCodeProtocol, "stream id not increasing"}
	}
	c.lastID = id
	full := len(c.streams) >= ourMaxConcurrentStreams
	c.mu.Unlock()
	if full {
		c.resetStream(id, errCodeRefusedStream)
		return nil
	}
	var method, path, ctype, timeout, encoding string
	for _, f := range fields {
		switch f.Name {
		case ":method":
			method = f.Value
		case ":path":
			path = f.Value
		case "content-type":
			ctype = f.Value
		case "grpc-timeout":
			timeout = f.Value
		case "grpc-encoding":
			encoding = f.Value
		}
	}
	endStream := fh.flags&flagEndStream != 0
	if method != "POST" || !isGRPCContentType(ctype) {
		c.respondOnly(id, "415", codeUnimplemented, "this is a gRPC server")
		return nil
	}
	if encoding != "" && encoding != "identity" {
		c.respondOnly(id, "200", codeUnimplemented, "grpc-encoding "+encoding+" is not supported")
		return nil
	}
	h, ok := c.srv.handler(path)
	if !ok {
		// go-plugin's stdio and broker streams among others: its client
		// takes Unimplemented to mean a plugin without them.
		c.respondOnly(id, "200", codeUnimplemented, "unknown method "+strings.ToValidUTF8(path, "?"))
		return nil
	}
	var deadline time.Duration
	if timeout != "" {
		if deadline, err = parseTimeout(timeout); err != nil {
			c.respondOnly(id, "200", codeInvalidArgument, err.Error())
			return nil
		}
	}
	if !c.srv.beginCall() {
		c.respondOnly(id, "200", codeUnavailable, "the worker is shutting down")
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	if timeout != "" {
		// The timeout's cancel releases its timer; the parent, a plain
		// WithCancel of Background, holds nothing to release.
		ctx, cancel = context.WithTimeout(ctx, deadline)
	}
	st := newStream(c, id, cancel, h.maxRecv)
	if endStream {
		st.endRequest()
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel()
		c.srv.endCall()
		return io.EOF
	}
	c.streams[id] = st
	c.mu.Unlock()
	go func() {
		defer c.srv.endCall()
		defer st.handlerDone()
		call := newCall(st)
		h.serve(ctx, call)
		// A handler that returned without a status answers OK.
		call.finish(codeOK, "")
	}()
	return nil
}

// decodeHeaders decodes a header block. The decoded list is bounded by the
// SETTINGS_MAX_HEADER_LIST_SIZE we announce (RFC 9113 §6.5.2 counts 32
// bytes per field), so that a small block naming large table entries
// again and again cannot make it large.
func (c *conn) decodeHeaders(block []byte) ([]hpack.HeaderField, error) {
	var fields []hpack.HeaderField
	size, tooLarge := 0, false
	c.hdec.SetEmitFunc(func(f hpack.HeaderField) {
		size += len(f.Name) + len(f.Value) + 32
		if size > ourMaxHeaderBlock {
			tooLarge = true
			return
		}
		fields = append(fields, f)
	})
	_, err := c.hdec.Write(block)
	if err == nil {
		err = c.hdec.Close()
	}
	switch {
	case err != nil:
		return nil, connError{errCodeCompression, "HPACK: " + err.Error()}
	case tooLarge:
		return nil, connError{errCodeEnhanceYourCalm, "header list too large"}
	}
	return fields, nil
}

func (c *conn) handleData(fh frameHeader, p []byte) error {
	if fh.streamID == 0 {
		return connError{errCodeProtocol, "DATA on stream 0"}
	}
	// Flow control counts the whole frame, padding included.
	c.recvUnacked += int64(len(p))
	if c.recvUnacked >= recvWindow/2 {
		n := c.recvUnacked
		c.recvUnacked = 0
		c.writeFrames(func(b []byte) []byte {
			return appendFrame(b, frameWindowUpdate, 0, 0, binary.BigEndian.AppendUint32(nil, uint32(n)))
		})
	}
	st := c.stream(fh.streamID)
	if st == nil {
		return nil // a stream already answered or reset: discarded
	}
	if n := st.countReceived(int64(len(p))); n > 0 {
		c.writeFrames(func(b []byte) []byte {
			return appendFrame(b, frameWindowUpdate, 0, fh.streamID, binary.BigEndian.AppendUint32(nil, uint32(n)))
		})
	}
	data, err := stripPadding(fh, p)
	if err != nil {
		return err
	}
	if !st.push(data) {
		c.resetStream(fh.streamID, errCodeEnhanceYourCalm)
		st.reset(errTooMuchData)
	}
	if fh.flags&flagEndStream != 0 {
		st.endRequest()
	}
	return nil
}

func (c *conn) stream(id uint32) *stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

func (c *conn) forget(id uint32) {
	c.mu.Lock()
	delete(c.streams, id)
	c.mu.Unlock()
}

// writeFrames appends frames to the write buffer and flushes them. A
// write error closes the connection (the reader then ends too).
func (c *conn) writeFrames(build func([]byte) []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(build)
}

func (c *conn) writeLocked(build func([]byte) []byte) error {
	c.wbuf = build(c.wbuf[:0])
	return c.flushLocked(c.wbuf)
}

// flushLocked writes b and flushes; the caller holds wmu.
func (c *conn) flushLocked(b []byte) error {
	if _, err := c.bw.Write(b); err != nil {
		c.nc.Close()
		return err
	}
	if err := c.bw.Flush(); err != nil {
		c.nc.Close()
		return err
	}
	return nil
}

// headerBlock HPACK-encodes fields; the caller holds wmu and writes the
// block before releasing it.
func (c *conn) headerBlock(fields ...hpack.HeaderField) []byte {
	c.hbuf.Reset()
	for _, f := range fields {
		_ = c.henc.WriteField(f) // writes to a bytes.Buffer cannot fail
	}
	return c.hbuf.Bytes()
}

// appendHeaders appends a HEADERS frame, split into CONTINUATION frames
// when the block exceeds the peer's frame size.
func (c *conn) appendHeaders(b []byte, id uint32, block []byte, endStream bool) []byte {
	flags := uint8(0)
	if endStream {
		flags |= flagEndStream
	}
	typ := frameHeaders
	for {
		n := min(len(block), int(c.peerMaxFrame))
		f := flags
		if n == len(block) {
			f |= flagEndHeaders
		}
		b = appendFrame(b, typ, f, id, block[:n])
		block = block[n:]
		if len(block) == 0 {
			return b
		}
		typ, flags = frameContinuation, 0
	}
}

// respondOnly answers a call with a single HEADERS frame that ends the
// stream (gRPC's Trailers-Only response).
func (c *conn) respondOnly(id uint32, status string, code int, msg string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	block := c.headerBlock(statusFields(status, code, msg)...)
	c.writeLocked(func(b []byte) []byte { return c.appendHeaders(b, id, block, true) })
}

func (c *conn) resetStream(id uint32, code uint32) {
	c.writeFrames(func(b []byte) []byte {
		return appendFrame(b, frameRSTStream, 0, id, binary.BigEndian.AppendUint32(nil, code))
	})
}

func (c *conn) goAway(code uint32) {
	c.mu.Lock()
	last := c.lastID
	c.mu.Unlock()
	p := binary.BigEndian.AppendUint32(nil, last)
	p = binary.BigEndian.AppendUint32(p, code)
	c.writeFrames(func(b []byte) []byte { return appendFrame(b, frameGoAway, 0, 0, p) })
}

// close ends the connection and every call on it.
func (c *conn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	streams := make([]*stream, 0, len(c.streams))
	for _, st := range c.streams {
		streams = append(streams, st)
	}
	c.mu.Unlock()
	c.nc.Close()
	for _, st := range streams {
		st.reset(errConnClosed)
	}
	c.wmu.Lock()
	c.wcond.Broadcast()
	c.wmu.Unlock()
	c.srv.forgetConn(c)
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// statusFields is a Trailers-Only response: HTTP status, content type
// and the gRPC status in one header block.
func statusFields(status string, code int, msg string) []hpack.HeaderField {
	return append([]hpack.HeaderField{{Name: ":status", Value: status}, {Name: "content-type", Value: "application/grpc"}},
		trailerFields(code, msg)...)
}

func trailerFields(code int, msg string) []hpack.HeaderField {
	f := []hpack.HeaderField{{Name: "grpc-status", Value: strconv.Itoa(code)}}
	if msg != "" {
		f = append(f, hpack.HeaderField{Name: "grpc-message", Value: encodeGrpcMessage(msg)})
	}
	return f
}
