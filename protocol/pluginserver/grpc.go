package pluginserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// gRPC status codes (google.golang.org/grpc/codes) used here.
const (
	codeOK                = 0
	codeCanceled          = 1
	codeInvalidArgument   = 3
	codeNotFound          = 5
	codeResourceExhausted = 8
	codeUnimplemented     = 12
	codeInternal          = 13
	codeUnavailable       = 14
)

// callError ends a call with a gRPC status other than OK.
type callError struct {
	code int
	msg  string
}

func (e *callError) Error() string { return fmt.Sprintf("grpc status %d: %s", e.code, e.msg) }

func statusf(code int, format string, args ...any) *callError {
	return &callError{code: code, msg: fmt.Sprintf(format, args...)}
}

// call is one gRPC call on an HTTP/2 stream: length-prefixed messages in
// the request and response bodies, the status in the response trailers.
// recv is for one goroutine at a time; send and finish may be called from
// several and are serialized.
type call struct {
	st *stream

	mu       sync.Mutex
	finished bool
}

func newCall(st *stream) *call { return &call{st: st} }

// recv reads one message. It returns io.EOF when the client has ended its
// side cleanly between messages.
func (c *call) recv() ([]byte, error) {
	var hdr [5]byte
	if err := c.st.readFull(hdr[:]); err != nil {
		return nil, readError(err)
	}
	if hdr[0] != 0 {
		return nil, statusf(codeUnimplemented, "compressed messages are not supported")
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if uint64(n) > uint64(c.st.maxRecv) {
		return nil, statusf(codeResourceExhausted, "received message larger than max (%d vs. %d)", n, c.st.maxRecv)
	}
	msg := make([]byte, n)
	if err := c.st.readFull(msg); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, readError(err)
	}
	return msg, nil
}

// readError maps a failed read of the request: io.EOF stays (a clean end
// between messages); a request that ended inside a message is malformed;
// a reset or a lost connection is the client going away.
func readError(err error) error {
	switch {
	case err == io.EOF:
		return io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return statusf(codeInternal, "the request ended inside a message")
	case errors.Is(err, errTooMuchData):
		return statusf(codeResourceExhausted, "%v", err)
	}
	return statusf(codeCanceled, "reading the request: %v", err)
}

// send writes one message and pushes it to the client at once.
func (c *call) send(msg []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return errors.New("pluginserver: send after the call ended")
	}
	return c.sendLocked(msg)
}

func (c *call) sendLocked(msg []byte) error {
	return c.st.send(nonNil(msg), false, 0, "")
}

// nonNil keeps an empty message a message: st.send takes nil for none.
func nonNil(msg []byte) []byte {
	if msg == nil {
		return []byte{}
	}
	return msg
}

// finish ends the call with a status. Only the first finish counts.
func (c *call) finish(code int, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finishLocked(code, msg)
}

func (c *call) finishLocked(code int, msg string) {
	if c.finished {
		return
	}
	c.finished = true
	_ = c.st.send(nil, true, code, msg) // a client that left cannot be told
}

// fail finishes the call with err's status (internal for an error that is
// not a *callError).
func (c *call) fail(err error) {
	var ce *callError
	if !errors.As(err, &ce) {
		ce = statusf(codeInternal, "%v", err)
	}
	c.finish(ce.code, ce.msg)
}

// reply sends msg as the last message of the call, with status OK, in one
// write.
func (c *call) reply(msg []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return
	}
	c.finished = true
	_ = c.st.send(nonNil(msg), true, codeOK, "")
}

// encodeGrpcMessage percent-encodes a status message as the gRPC HTTP/2
// protocol requires: everything outside printable ASCII, and '%'.
func encodeGrpcMessage(msg string) string {
	var b strings.Builder
	for i := 0; i < len(msg); i++ {
		ch := msg[i]
		if ch >= ' ' && ch <= '~' && ch != '%' {
			b.WriteByte(ch)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", ch)
	}
	return b.String()
}

// isGRPCContentType accepts application/grpc, with or without a
// +subtype or parameters; the subtype names the client's codec, whose bytes
// on the wire are protobuf for every client of this service.
func isGRPCContentType(ct string) bool {
	const base = "application/grpc"
	if !strings.HasPrefix(ct, base) {
		return false
	}
	rest := ct[len(base):]
	return rest == "" || rest[0] == '+' || rest[0] == ';'
}

// timeoutUnits are grpc-timeout's units.
var timeoutUnits = map[byte]time.Duration{
	'H': time.Hour, 'M': time.Minute, 'S': time.Second,
	'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond,
}

// parseTimeout reads a grpc-timeout header: 1 to 8 digits and a unit.
func parseTimeout(s string) (time.Duration, error) {
	if len(s) < 2 || len(s) > 9 {
		return 0, fmt.Errorf("malformed grpc-timeout %q", s)
	}
	unit, ok := timeoutUnits[s[len(s)-1]]
	v, err := strconv.ParseUint(s[:len(s)-1], 10, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("malformed grpc-timeout %q", s)
	}
	// At most 8 digits, so only hours can overflow a Duration.
	if unit == time.Hour && v > uint64(time.Duration(1<<63-1)/time.Hour) {
		return time.Duration(1<<63 - 1), nil
	}
	return time.Duration(v) * unit, nil
}
