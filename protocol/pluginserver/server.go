package pluginserver

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
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

// Server serves a protocol.Service over gRPC on cleartext HTTP/2.
type Server struct {
	svc   protocol.Service
	grace time.Duration
	http  *http.Server

	stopOnce sync.Once
	stopped  chan struct{} // closed when a Shutdown's stop has finished
}

// NewServer returns a server for svc. grace bounds how long a Shutdown
// waits for calls in progress before it closes every connection; 0 means
// protocol.DefaultShutdownGrace.
func NewServer(svc protocol.Service, grace time.Duration) *Server {
	if grace <= 0 {
		grace = protocol.DefaultShutdownGrace
	}
	s := &Server{svc: svc, grace: grace, stopped: make(chan struct{})}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	s.http = &http.Server{
		Handler:   s,
		Protocols: &p,
		HTTP2: &http.HTTP2Config{
			// A maximal job spec is one message; the client may send it
			// without waiting for window updates every megabyte.
			MaxReceiveBufferPerStream:     4 << 20,
			MaxReceiveBufferPerConnection: 4 << 20,
		},
		ErrorLog: log.New(errorLogWriter{}, "", 0),
	}
	return s
}

// Serve accepts connections on l until the server stops: after a Shutdown
// call (the worker's or go-plugin's controller's) once the replies are out,
// or at once on Stop. It then returns nil.
func (s *Server) Serve(l net.Listener) error {
	err := s.http.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		<-s.stopped
		return nil
	}
	return err
}

// Stop closes the listener and every connection at once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		_ = s.http.Close()
		close(s.stopped)
	})
}

// stopAfterReply stops the server once the current replies are out: a
// graceful shutdown waits for calls in progress, the Shutdown call's own
// among them, for at most the grace period; then everything is closed.
func (s *Server) stopAfterReply() {
	s.stopOnce.Do(func() {
		go func() {
			defer close(s.stopped)
			ctx, cancel := context.WithTimeout(context.Background(), s.grace)
			defer cancel()
			if err := s.http.Shutdown(ctx); err != nil {
				_ = s.http.Close()
			}
		}()
	})
}

// ServeHTTP routes one gRPC call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 || r.Method != http.MethodPost || !isGRPCContentType(r.Header.Get("Content-Type")) {
		http.Error(w, "this is a gRPC server", http.StatusUnsupportedMediaType)
		return
	}
	w.Header().Set("Content-Type", "application/grpc")
	w.WriteHeader(http.StatusOK)
	maxRecv := maxControlMessageBytes
	if r.URL.Path == methodRun {
		maxRecv = protocol.MaxWireBytes
	}
	c := newCall(w, r, maxRecv)
	ctx, cancel, err := callContext(r)
	if err != nil {
		c.finish(codeInvalidArgument, err.Error())
		return
	}
	defer cancel()
	if enc := r.Header.Get("Grpc-Encoding"); enc != "" && enc != "identity" {
		c.finish(codeUnimplemented, "grpc-encoding "+enc+" is not supported")
		return
	}
	switch r.URL.Path {
	case methodRun:
		s.run(ctx, c)
	case methodDescribe:
		unary(c, decodeEmpty, func() []byte { return s.describe(ctx) })
	case methodShutdown:
		unary(c, decodeEmpty, func() []byte { return s.shutdown(ctx) })
	case methodControllerStop:
		// go-plugin's client sends this when it closes. As in
		// go-plugin's server, the server stops whatever the Service says.
		unary(c, decodeEmpty, func() []byte {
			_ = s.shutdownRecovered(ctx)
			s.stopAfterReply()
			return nil
		})
	case methodHealthCheck:
		req, err := c.recv()
		if err == nil {
			var service string
			if service, err = decodeHealthCheckRequest(req); err == nil && service != "" && service != healthServiceName {
				err = statusf(codeNotFound, "unknown service")
			}
		}
		if err != nil {
			c.fail(requestError(err))
			return
		}
		c.reply(healthServing)
	default:
		// go-plugin's stdio and broker streams among others: its client
		// takes Unimplemented to mean a plugin without them.
		c.finish(codeUnimplemented, "unknown method "+r.URL.Path)
	}
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

// recoverAs turns a panic into an internal_error in *err.
func recoverAs(err *error, what string) {
	if p := recover(); p != nil {
		*err = &protocol.Error{Code: protocol.CodeInternalError, Message: "the worker panicked while " + what}
	}
}

// errorLogWriter drops net/http's connection-level log lines (a client
// that resets a stream or hangs up is routine here); the outcome of every
// call reaches the supervisor through the call itself.
type errorLogWriter struct{}

func (errorLogWriter) Write(p []byte) (int, error) { return len(p), nil }
