package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strings"
	"syscall"

	"golang.org/x/net/netutil"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// The metrics listener is an opt-in TCP port for Prometheus, which cannot
// scrape a unix socket: GET (and HEAD) of /metrics, /healthz and /version,
// nothing else. It has no authentication, so it binds a loopback address
// unless the operator says otherwise: the unix socket admits its owner
// and root only, but any local user, and with a wider address anyone who
// can reach the port, reads what this port answers. What it answers is
// counts, gauges, the host's id and the build's version: no job, input,
// output or key. docs/supervisor.md, "Metrics for Prometheus".

// MetricsConfig configures the metrics listener.
type MetricsConfig struct {
	// Addr is host:port to listen on; the host must be a loopback
	// address (127.0.0.0/8, ::1, or localhost) unless AllowRemote.
	Addr string
	// AllowRemote accepts any address, 0.0.0.0 included.
	AllowRemote bool
	// Version is the JSON body GET /version answers.
	Version []byte
}

// ErrMetricsAddr is a metrics address that cannot be used.
var ErrMetricsAddr = errors.New("metrics address")

// metricsMaxConns caps the listener's connections: a scraper holds one.
const metricsMaxConns = 16

// CheckMetricsAddr checks addr as MetricsConfig takes it, before anything
// is bound.
func CheckMetricsAddr(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w %q: want HOST:PORT, e.g. 127.0.0.1:9464", ErrMetricsAddr, addr)
	}
	if port == "" {
		return fmt.Errorf("%w %q: no port", ErrMetricsAddr, addr)
	}
	if allowRemote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		what := host + " is not a loopback address"
		if host == "" {
			what = "no host is every address, not loopback"
		}
		return fmt.Errorf("%w %q: %s; the listener has no authentication (use 127.0.0.1 or [::1], or allow it explicitly with --metrics-allow-remote)", ErrMetricsAddr, addr, what)
	}
	return nil
}

// MetricsServer is the metrics listener of one API server.
type MetricsServer struct {
	http *http.Server
	ln   net.Listener
}

// ListenMetrics binds cfg.Addr for s's metrics. The address actually
// bound is checked again (localhost must resolve to loopback).
func (s *Server) ListenMetrics(cfg MetricsConfig) (*MetricsServer, error) {
	if err := CheckMetricsAddr(cfg.Addr, cfg.AllowRemote); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		// Another process has the port: busy (exit 4), which a unit's
		// Restart=on-failure tries again, as the port may come free.
		return nil, &protocol.Error{Code: protocol.CodeBusy, Message: protocol.SafeMessage(fmt.Sprintf("listen for metrics on %s: the address is in use", cfg.Addr))}
	}
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeIOError, "listen for metrics on %s: %s", cfg.Addr, protocol.SafeMessage(err.Error()))
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !cfg.AllowRemote && !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("%w %q: bound %s, which is not a loopback address", ErrMetricsAddr, cfg.Addr, tcp.IP)
	}
	mux := http.NewServeMux()
	// A pattern with a method matches HEAD too, and the mux answers 405
	// with Allow for another method on these paths, 404 elsewhere.
	mux.HandleFunc("GET /metrics", s.metrics)
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(cfg.Version)
	})
	h := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		// The mux would redirect a path it cleans (/x/../metrics): a
		// plain 404 instead, as for any other path.
		if p := r.URL.Path; !strings.HasPrefix(p, "/") || path.Clean(p) != p {
			http.NotFound(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	}
	m := &MetricsServer{ln: netutil.LimitListener(ln, metricsMaxConns), http: &http.Server{
		Handler:           http.HandlerFunc(h),
		ReadHeaderTimeout: s.cfg.HeaderTimeout,
		// Its requests have no body: the whole request within the
		// header's time.
		ReadTimeout:                  s.cfg.HeaderTimeout,
		WriteTimeout:                 s.cfg.WriteTimeout,
		IdleTimeout:                  s.cfg.IdleTimeout,
		MaxHeaderBytes:               maxHeaderBytes,
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}}
	return m, nil
}

// healthz answers 200 while the daemon serves, 503 once its stop began.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.polls.Err() != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "stopping")
		return
	}
	fmt.Fprintln(w, "ok")
}

// Addr is the address bound (the port chosen, for port 0).
func (m *MetricsServer) Addr() net.Addr { return m.ln.Addr() }

// Serve blocks until Close.
func (m *MetricsServer) Serve() error {
	err := m.http.Serve(m.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the listener at once, and ends the requests in progress:
// a scrape cut short is retried at the next interval, and the daemon's
// stop bound stays the API's drain.
func (m *MetricsServer) Close() error {
	m.http.Close()
	return m.ln.Close()
}
