// Package api is the supervisor's local HTTP/JSON API on a unix socket
// (mode 0600, peer credentials checked) and its client.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/ui"
)

// Server serves one supervisor.
type Server struct {
	sup    *supervisor.Supervisor
	log    *slog.Logger
	cfg    Config
	http   *http.Server
	ln     net.Listener
	mux    *http.ServeMux
	conns  *connTracker
	budget *byteBudget
	stats  Stats
	// polls ends every long poll when Shutdown begins (endPolls): a
	// waiting client gets its answer at once instead of holding the stop
	// for the drain's bound.
	polls    context.Context
	endPolls context.CancelFunc
}

// Stats count what the server's bounds did.
type Stats struct {
	// Evicted: connections closed to make room for new ones.
	Evicted atomic.Int64
	// Refused: connections answered busy at the cap.
	Refused atomic.Int64
	// Panics: handlers that panicked (answered internal_error).
	Panics atomic.Int64
}

// maxHeaderBytes bounds a request's line and headers. The API's requests
// carry a path with a job id and a short query; net/http's default (1 MiB)
// would let each slow connection hold a megabyte.
const maxHeaderBytes = 16 << 10

// Listen validates cfg, then opens the socket at path, accepting the
// current uid and root.
func Listen(sup *supervisor.Supervisor, path string, log *slog.Logger, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	log = logger(log)
	ln, err := listen(path)
	if err != nil {
		return nil, err
	}
	owner := uint32(os.Getuid())
	pl := &peerListener{UnixListener: ln,
		allowed: func(uid uint32) bool { return uid == owner || uid == 0 },
		refused: func(uid uint32, pid int32) { log.Warn("api: refused a client of another uid", "uid", uid, "pid", pid) },
	}
	s := newServer(sup, log, cfg)
	s.conns.onEvict = func() { s.stats.Evicted.Add(1) }
	s.conns.onRefuse = func() { s.stats.Refused.Add(1) }
	s.ln = &limitListener{Listener: pl, t: s.conns, refuser: make(chan struct{}, 64)}
	s.http = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: cfg.HeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnState:         s.conns.connState,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		// OPTIONS * would get an empty 200 from net/http itself.
		DisableGeneralOptionsHandler: true,
		// net/http's own complaints (accept errors such as EMFILE).
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// newServer is a server of sup with its routes, not listening yet; cfg
// has its defaults.
func newServer(sup *supervisor.Supervisor, log *slog.Logger, cfg Config) *Server {
	s := &Server{sup: sup, log: log, cfg: cfg, conns: newConnTracker(cfg.MaxConns), budget: newByteBudget(cfg.BodyBudget)}
	s.polls, s.endPolls = context.WithCancel(context.Background())
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/jobs", s.submit)
	s.mux.HandleFunc("GET /v1/jobs", s.list)
	s.mux.HandleFunc("GET /v1/jobs/{id}", s.status)
	s.mux.HandleFunc("POST /v1/jobs/{id}/cancel", s.cancel)
	s.mux.HandleFunc("POST /v1/jobs/{id}/resolve", s.resolve)
	s.mux.HandleFunc("POST /v1/drain", s.drain)
	s.mux.HandleFunc("GET /v1/drain", s.drainStatus)
	s.mux.HandleFunc("GET /v1/jobs/{id}/result", s.result)
	s.mux.HandleFunc("GET /v1/jobs/{id}/events", s.events)
	s.mux.HandleFunc("GET /v1/jobs/{id}/wait", s.wait)
	s.mux.HandleFunc("GET /v1/jobs/{id}/spec", s.spec)
	s.mux.HandleFunc("GET /v1/capabilities", s.capabilities)
	s.mux.HandleFunc("POST /v1/gc", s.gc)
	s.mux.HandleFunc("GET /metrics", s.metrics)
	s.mux.HandleFunc("GET /v1/hosts", s.hosts)
	s.mux.HandleFunc("GET /v1/overview", s.overview)
	s.mux.HandleFunc("GET /v1/lookup/{prefix}", s.lookup)
	s.mux.HandleFunc("GET /v1/changes", s.changes)
	s.registerStore(s.mux)
	s.registerFencing(s.mux)
	s.registerUI(s.mux)
	// Everything else gets a contract answer too, not net/http's text.
	s.mux.HandleFunc("/", s.noRoute)
}

// Serve blocks until Shutdown.
func (s *Server) Serve() error {
	err := s.http.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close closes a server that never served (Serve was not called): its
// socket is removed and nothing was answered on it.
func (s *Server) Close() error {
	s.endPolls()
	return s.ln.Close()
}

// Shutdown stops accepting, ends the long polls (each answers what it
// would at its bound: the job as it is), and waits for open requests
// (bounded by ctx).
func (s *Server) Shutdown(ctx context.Context) error {
	s.endPolls()
	return s.http.Shutdown(ctx)
}

// pollContext is a long poll's context: the request's, ended at the
// long-poll bound or when Shutdown begins.
func (s *Server) pollContext(r context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r, s.cfg.LongPoll)
	stop := context.AfterFunc(s.polls, cancel)
	return ctx, func() { stop(); cancel() }
}

// pollEnded reports whether err is a long poll's end (its bound, or the
// server's shutdown) rather than its client's going or another failure:
// then the answer is the state as it is.
func pollEnded(err error, poll, request context.Context) bool {
	return (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) && poll.Err() != nil && request.Err() == nil
}

// Stats of this server.
func (s *Server) Stats() *Stats { return &s.stats }

// OpenConns is how many connections the server holds now.
func (s *Server) OpenConns() int { return s.conns.open() }

// serveHTTP answers what the mux would not answer with a contract error:
// non-canonical paths (the mux would redirect them), and panics.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.stats.Panics.Add(1)
			s.log.Error("api: handler panicked", "method", methodOf(r), "route", routeOf(r), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			s.writeError(w, r, protocol.Errorf(protocol.CodeInternalError, "internal error"))
		}
	}()
	// The dashboard's root, /ui/, is the one path that ends in a slash.
	if p := r.URL.Path; !strings.HasPrefix(p, "/") || path.Clean(p) != p && p != ui.Prefix {
		s.writeErrorStatus(w, r, http.StatusNotFound, protocol.Errorf(protocol.CodeInvalidJob, "no such route: %s %s", methodOf(r), protocol.QuotePrefix(p)))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// noRoute answers a path no route has (404), or a method the path's route
// does not take (405, with Allow).
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		probe := *r
		probe.Method = m
		if _, pattern := s.mux.Handler(&probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 && !contains(allow, r.Method) {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeErrorStatus(w, r, http.StatusMethodNotAllowed, protocol.Errorf(protocol.CodeInvalidJob, "%s %s: the route takes %s",
			methodOf(r), protocol.QuotePrefix(r.URL.Path), strings.Join(allow, " or ")))
		return
	}
	s.writeErrorStatus(w, r, http.StatusNotFound, protocol.Errorf(protocol.CodeInvalidJob, "no such route: %s %s",
		methodOf(r), protocol.QuotePrefix(r.URL.Path)))
}
