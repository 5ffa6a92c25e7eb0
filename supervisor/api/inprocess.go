package api

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
)

// InProcess is the API of a supervisor this process holds, served
// without a socket: the same routes, checks and answers as the daemon's
// (Listen), for a caller that reads a home no daemon owns
// (supervisor.OpenReadOnly) through the API's own handlers, so that
// its answers cannot drift from a daemon's. Close ends its long polls.
type InProcess struct {
	s *Server
}

// NewInProcess serves sup's API in process; cfg as Listen's (its
// connection bounds do not apply: there are no connections).
func NewInProcess(sup *supervisor.Supervisor, log *slog.Logger, cfg Config) (*InProcess, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &InProcess{s: newServer(sup, logger(log), cfg)}, nil
}

// ServeHTTP answers one request as the daemon would.
func (p *InProcess) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.s.serveHTTP(w, r) }

// Close ends the long polls under way (each answers what it has).
func (p *InProcess) Close() { p.s.endPolls() }

// handlerTransport is an http.RoundTripper that answers each request
// with a handler, in process.
type handlerTransport struct {
	h http.Handler
}

// NewHandlerClient is a Client whose requests h answers in process
// (NewInProcess): the same JSON, errors and client code paths as over a
// daemon's socket.
func NewHandlerClient(h http.Handler) *Client {
	return &Client{http: &http.Client{Transport: handlerTransport{h: h}}}
}

// RoundTrip runs the handler on the request in a goroutine of its own
// and returns the response once the handler has written its status (or
// returned): the body streams from the handler's writes through a pipe,
// so a long poll or an event stream answers as it goes. The request's
// context ends the handler's as it does a server's.
func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, body: pw, ready: make(chan struct{})}
	r := req.Clone(req.Context())
	r.RequestURI = req.URL.RequestURI()
	r.RemoteAddr = "in-process"
	if r.Body == nil {
		r.Body = http.NoBody
	}
	go func() {
		defer func() {
			v := recover()
			w.start(http.StatusOK)
			if v != nil {
				pw.CloseWithError(fmt.Errorf("in-process handler panicked: %v", v))
				return
			}
			pw.Close()
		}()
		t.h.ServeHTTP(w, r)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	body := io.ReadCloser(pr)
	if req.Method == http.MethodHead {
		body = http.NoBody
		go io.Copy(io.Discard, pr)
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: body, ContentLength: -1, Request: req,
	}, nil
}

// pipeWriter is the handler's http.ResponseWriter in process: the
// header map until the status is written, then the body into the pipe.
type pipeWriter struct {
	header http.Header
	sent   http.Header
	body   *io.PipeWriter
	status int
	once   sync.Once
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

// start fixes the status and headers (the first call wins, as on a
// connection) and lets RoundTrip return the response.
func (w *pipeWriter) start(status int) {
	w.once.Do(func() {
		w.status, w.sent = status, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) WriteHeader(status int) { w.start(status) }

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.start(http.StatusOK)
	return w.body.Write(p)
}

// Flush lets http.NewResponseController and event streams flush: the
// pipe hands each write over as it is made.
func (w *pipeWriter) Flush() { w.start(http.StatusOK) }
