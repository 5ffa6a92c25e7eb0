package pluginserver

import (
	"encoding/binary"
	"fmt"
	"io"
)

// HTTP/2 framing (RFC 9113 §4, §6): as much as a gRPC server needs.

const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

type frameType uint8

const (
	frameData         frameType = 0x0
	frameHeaders      frameType = 0x1
	frameRSTStream    frameType = 0x3
	frameSettings     frameType = 0x4
	framePushPromise  frameType = 0x5
	framePing         frameType = 0x6
	frameGoAway       frameType = 0x7
	frameWindowUpdate frameType = 0x8
	frameContinuation frameType = 0x9
)

const (
	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20
)

const (
	settingHeaderTableSize      = 0x1
	settingMaxConcurrentStreams = 0x3
	settingInitialWindowSize    = 0x4
	settingMaxFrameSize         = 0x5
	settingMaxHeaderListSize    = 0x6
)

// Error codes (RFC 9113 §7).
const (
	errCodeProtocol         = 0x1
	errCodeFlowControl      = 0x3
	errCodeFrameSize        = 0x6
	errCodeRefusedStream    = 0x7
	errCodeCompression      = 0x9
	errCodeEnhanceYourCalm  = 0xb
	defaultMaxFrameSize     = 16384
	defaultWindowSize       = 65535
	maxWindowSize           = 1<<31 - 1
	ourMaxFrameSize         = 1 << 20
	ourMaxConcurrentStreams = 64
	ourMaxHeaderBlock       = 64 << 10
)

type frameHeader struct {
	length   uint32
	typ      frameType
	flags    uint8
	streamID uint32
}

// connError ends the whole connection with a GOAWAY carrying code.
type connError struct {
	code uint32
	why  string
}

func (e connError) Error() string {
	return fmt.Sprintf("http2: connection error %d: %s", e.code, e.why)
}

// readFrame reads one frame into buf (grown as needed) and returns its
// header and payload. A frame longer than maxLen is a FRAME_SIZE_ERROR.
func readFrame(r io.Reader, buf []byte, maxLen uint32) (frameHeader, []byte, []byte, error) {
	var h [9]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frameHeader{}, nil, buf, err
	}
	fh := frameHeader{
		length:   uint32(h[0])<<16 | uint32(h[1])<<8 | uint32(h[2]),
		typ:      frameType(h[3]),
		flags:    h[4],
		streamID: binary.BigEndian.Uint32(h[5:]) & (1<<31 - 1),
	}
	if fh.length > maxLen {
		return fh, nil, buf, connError{errCodeFrameSize, fmt.Sprintf("frame of %d bytes", fh.length)}
	}
	if cap(buf) < int(fh.length) {
		buf = make([]byte, fh.length)
	}
	payload := buf[:fh.length]
	if _, err := io.ReadFull(r, payload); err != nil {
		return fh, nil, buf, err
	}
	return fh, payload, buf, nil
}

// appendFrame appends a frame with payload p.
func appendFrame(b []byte, typ frameType, flags uint8, streamID uint32, p []byte) []byte {
	n := len(p)
	b = append(b, byte(n>>16), byte(n>>8), byte(n), byte(typ), flags)
	b = binary.BigEndian.AppendUint32(b, streamID&(1<<31-1))
	return append(b, p...)
}

// stripPadding removes a PADDED frame's pad length and padding.
func stripPadding(fh frameHeader, p []byte) ([]byte, error) {
	if fh.flags&flagPadded == 0 {
		return p, nil
	}
	if len(p) < 1 || int(p[0]) > len(p)-1 {
		return nil, connError{errCodeProtocol, "bad padding"}
	}
	return p[1 : len(p)-int(p[0])], nil
}
