package pluginserver

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Full method names, as gRPC puts them in the request path.
const (
	methodDescribe         = "/cyber.worker.v1.Worker/Describe"
	methodRun              = "/cyber.worker.v1.Worker/Run"
	methodShutdown         = "/cyber.worker.v1.Worker/Shutdown"
	methodHealthCheck      = "/grpc.health.v1.Health/Check"
	methodControllerStop   = "/plugin.GRPCController/Shutdown"
	healthServiceName      = "plugin" // go-plugin's GRPCServiceName
	maxControlMessageBytes = 64 << 10
)

// Server serves a protocol.Service over gRPC on cleartext HTTP/2 (h2c
// with prior knowledge, which is what grpc-go speaks on a unix socket).
type Server struct {
	svc   protocol.Service
	grace time.Duration

	mu      sync.Mutex
	ln      net.Listener
	conns   map[*conn]struct{}
	closing bool
	active  int // calls with a running handler

	stopOnce sync.Once
	stopped  chan struct{} // closed when the server has stopped

	extra map[string]handler // Handle's, read-only once serving
}

// NewServer returns a server for svc. grace bounds how long a Shutdown
// waits for calls in progress before it closes every connection; 0 means
// protocol.DefaultShutdownGrace.
func NewServer(svc protocol.Service, grace time.Duration) *Server {
	if grace <= 0 {
		grace = protocol.DefaultShutdownGrace
	}
	return &Server{svc: svc, grace: grace, conns: map[*conn]struct{}{}, stopped: make(chan struct{})}
}

// Serve accepts connections on l until the server stops: after a Shutdown
// call (the worker's or go-plugin's controller's) once the replies are out,
// or at once on Stop. It then returns nil.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		l.Close()
		<-s.stopped
		return nil
	}
	s.ln = l
	s.mu.Unlock()
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				<-s.stopped
				return nil
			}
			return err
		}
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go c.serve()
	}
}

// Stop closes the listener and every connection at once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.beginStop()
		s.closeConns()
		close(s.stopped)
	})
}

// stopAfterReply stops the server once the current replies are out: it
// stops accepting, waits for calls in progress (the Shutdown call's own
// among them) for at most the grace period, then closes everything.
func (s *Server) stopAfterReply() {
	s.stopOnce.Do(func() {
		s.beginStop()
		go func() {
			defer close(s.stopped)
			deadline := time.Now().Add(s.grace)
			for s.activeCalls() > 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			s.closeConns()
		}()
	})
}

func (s *Server) beginStop() {
	s.mu.Lock()
	s.closing = true
	ln := s.ln
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
}

func (s *Server) closeConns() {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

func (s *Server) forgetConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// beginCall counts a call whose handler starts; false once stopping.
func (s *Server) beginCall() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.active++
	return true
}

func (s *Server) endCall() {
	s.mu.Lock()
	s.active--
	s.mu.Unlock()
}

func (s *Server) activeCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// handler is a served method: how large its request messages may be, and
// what answers it (on its own goroutine).
type handler struct {
	maxRecv int
	serve   func(ctx context.Context, c *call)
}

// handler routes a method; false for every method not served.
func (s *Server) handler(path string) (handler, bool) {
	if h, ok := s.extra[path]; ok {
		return h, true
	}
	switch path {
	case methodRun:
		return handler{protocol.MaxWireBytes, s.run}, true
	case methodDescribe:
		return handler{maxControlMessageBytes, func(ctx context.Context, c *call) {
			unary(c, decodeEmpty, func() []byte { return s.describe(ctx) })
		}}, true
	case methodShutdown:
		return handler{maxControlMessageBytes, func(ctx context.Context, c *call) {
			unary(c, decodeEmpty, func() []byte { return s.shutdown(ctx) })
		}}, true
	case methodControllerStop:
		// go-plugin's client sends this when it closes. As in
		// go-plugin's server, the server stops whatever the Service says.
		return handler{maxControlMessageBytes, func(ctx context.Context, c *call) {
			unary(c, decodeEmpty, func() []byte {
				_ = s.shutdownRecovered(ctx)
				s.stopAfterReply()
				return nil
			})
		}}, true
	case methodHealthCheck:
		return handler{maxControlMessageBytes, func(_ context.Context, c *call) {
			unary(c, func(req []byte) error {
				service, err := decodeHealthCheckRequest(req)
				if err == nil && service != "" && service != healthServiceName {
					err = statusf(codeNotFound, "unknown service")
				}
				return err
			}, func() []byte { return healthServing })
		}}, true
	}
	return handler{}, false
}

// unary reads one request message, checks it with decode, and replies with
// what answer returns.
func unary(c *call, decode func([]byte) error, answer func() []byte) {
	req, err := c.recv()
	if err == nil {
		err = decode(req)
	}
	if err != nil {
		c.fail(requestError(err))
		return
	}
	c.reply(answer())
}

// requestError maps a failure to read a request message as grpc-go's
// server would.
func requestError(err error) error {
	var we wireError
	switch {
	case errors.As(err, &we):
		return statusf(codeInternal, "grpc: error unmarshalling request: %v", err)
	case err == io.EOF:
		return statusf(codeInternal, "no request message")
	}
	return err
}

func (s *Server) describe(ctx context.Context) []byte {
	caps, desc, err := s.describeRecovered(ctx)
	if err == nil {
		err = caps.Validate()
	}
	if err == nil {
		if derr := desc.Validate(); derr != nil {
			err = protocol.Errorf(protocol.CodeInternalError, "the worker's own descriptor is invalid: %s", protocol.AsError(derr).Message)
		}
	}
	if err != nil {
		return encodeDescribeResponse(nil, nil, errorJSON(protocol.AsError(err)))
	}
	cb, err := caps.MarshalJSON()
	if err != nil {
		return encodeDescribeResponse(nil, nil, errorJSON(protocol.Errorf(protocol.CodeInternalError, "encoding capabilities")))
	}
	db, err := desc.MarshalJSON()
	if err != nil {
		return encodeDescribeResponse(nil, nil, errorJSON(protocol.Errorf(protocol.CodeInternalError, "encoding the descriptor")))
	}
	return encodeDescribeResponse(cb, db, nil)
}

func (s *Server) describeRecovered(ctx context.Context) (c protocol.Capabilities, d protocol.WorkerDescriptor, err error) {
	defer recoverAs(&err, "describing the worker")
	return s.svc.Describe(ctx)
}

// shutdown asks the Service to stop; when it agrees, the server stops
// after this reply.
func (s *Server) shutdown(ctx context.Context) []byte {
	if err := s.shutdownRecovered(ctx); err != nil {
		return encodeShutdownResponse(errorJSON(protocol.AsError(err)))
	}
	s.stopAfterReply()
	return encodeShutdownResponse(nil)
}

func (s *Server) shutdownRecovered(ctx context.Context) (err error) {
	defer recoverAs(&err, "shutting down")
	return s.svc.Shutdown(ctx)
}

func errorJSON(e *protocol.Error) []byte {
	b, err := e.MarshalJSON()
	if err != nil {
		return []byte(`{"code":"internal_error","message":"unencodable error","retryable":true}`)
	}
	return b
}

// recoverAs turns a panic into an internal_error in *err. It is not
// retryable: deterministic code that panicked on this input will panic
// again.
func recoverAs(err *error, what string) {
	if p := recover(); p != nil {
		*err = &protocol.Error{Code: protocol.CodeInternalError, Message: "the worker panicked while " + what}
	}
}
