package pluginserver

import (
	"context"
	"fmt"
)

// Methods beyond the worker protocol. A worker serves none: this is for
// test workers that stand for a hostile one, which answer go-plugin's
// stdio and broker streams, or a call of the protocol in their own way,
// with framing the honest server never sends (internal/hostileworker).

// Stream is one call of a method served through Handle.
type Stream struct {
	c *call
}

// Recv reads the next request message; io.EOF once the client has ended
// its side.
func (s *Stream) Recv() ([]byte, error) { return s.c.recv() }

// Send writes one response message.
func (s *Stream) Send(msg []byte) error { return s.c.send(msg) }

// SendRaw writes b into the response body as it is, without the framing
// Send adds: the caller frames its messages itself, and may declare one
// larger than it ever holds at once. It waits for the client's flow
// control like Send.
func (s *Stream) SendRaw(b []byte) error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.c.finished {
		return fmt.Errorf("pluginserver: send after the call ended")
	}
	return s.c.st.sendRaw(b)
}

// Handle serves method, a full gRPC path ("/package.Service/Method"),
// with serve, on its own goroutine for each call, whose request messages
// are bounded by maxRecv. It replaces the server's own answer to that
// method, if any. The call ends with status OK when serve returns. Call
// it before Serve.
func (s *Server) Handle(method string, maxRecv int, serve func(ctx context.Context, st *Stream)) {
	if s.extra == nil {
		s.extra = map[string]handler{}
	}
	s.extra[method] = handler{maxRecv: maxRecv, serve: func(ctx context.Context, c *call) { serve(ctx, &Stream{c: c}) }}
}
