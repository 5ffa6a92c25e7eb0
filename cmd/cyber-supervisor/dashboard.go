package main

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/ui"
)

// The dashboard command serves the daemon's read-only pages (/ui/) to a
// browser on a loopback TCP port with the operator's rights: whoever
// reaches the port reads what the operator may read, so the port
// answers only a browser that holds the token the command printed
// (dashboardGate), only under a loopback host name (DNS rebinding), only
// GET and HEAD, and every answer carries strict headers.

// dashboardCSP is the policy of every answer: the pages' own (nothing
// but the dashboard's own files, no inline script or style, no framing,
// no form sent elsewhere), on the port's refusals too.
const dashboardCSP = ui.ContentSecurityPolicy

// dashboardHeaders are set on every answer of the dashboard's port,
// whoever wrote the rest of it (the gate, the daemon, the store).
var dashboardHeaders = [][2]string{
	{"Content-Security-Policy", dashboardCSP},
	{"X-Frame-Options", "DENY"},
	{"X-Content-Type-Options", "nosniff"},
	{"Referrer-Policy", "no-referrer"},
	{"Cache-Control", "no-store"},
	{"Cross-Origin-Opener-Policy", "same-origin"},
	{"Cross-Origin-Resource-Policy", "same-origin"},
}

// tokenBytes is the token's size: 256 random bits.
const tokenBytes = 32

// newToken is a fresh random token, hex.
func newToken() (string, error) {
	var b [tokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("dashboard token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// dashboardGate guards the port: the Host, the token, the method and
// the path, then next answers.
type dashboardGate struct {
	token  string
	cookie string
	// hosts are the Host values a browser sends to this port: the
	// loopback names with its port, nothing a DNS name could rebind.
	hosts map[string]bool
	next  http.Handler
}

func newDashboardGate(token string, port int, next http.Handler) *dashboardGate {
	p := strconv.Itoa(port)
	return &dashboardGate{token: token, next: next,
		// The port is in the name: a browser's cookies are not kept
		// apart by port, and two dashboards may run side by side.
		cookie: "cyber_supervisor_dashboard_" + p,
		hosts:  map[string]bool{"127.0.0.1:" + p: true, "[::1]:" + p: true, "localhost:" + p: true},
	}
}

func (g *dashboardGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w = &headerWriter{ResponseWriter: w}
	if !g.hosts[r.Host] {
		refuse(w, http.StatusForbidden, protocol.Errorf(protocol.CodeForbidden,
			"host %s: the dashboard answers only 127.0.0.1, [::1] or localhost with its port", protocol.QuotePrefix(r.Host)))
		return
	}
	if q := r.URL.Query(); q.Has("token") {
		// The URL the command printed: the token becomes a cookie and
		// leaves the address bar (and the browser's history).
		if !g.valid(q.Get("token")) {
			refuse(w, http.StatusForbidden, protocol.Errorf(protocol.CodeForbidden, "a wrong token: use the URL the dashboard command printed"))
			return
		}
		http.SetCookie(w, &http.Cookie{Name: g.cookie, Value: g.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	if c, err := r.Cookie(g.cookie); err != nil || !g.valid(c.Value) {
		refuse(w, http.StatusForbidden, protocol.Errorf(protocol.CodeForbidden, "no token: open the URL the dashboard command printed"))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		refuse(w, http.StatusMethodNotAllowed, protocol.Errorf(protocol.CodeInvalidJob, "%s: the dashboard is read-only (GET and HEAD)", r.Method))
		return
	}
	switch {
	case r.URL.Path == "/":
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	case !dashboardPath(r.URL.Path):
		refuse(w, http.StatusNotFound, protocol.Errorf(protocol.CodeInvalidJob, "no such page: %s", protocol.QuotePrefix(r.URL.Path)))
		return
	}
	// What lies behind (the daemon, the store) needs no token, and the
	// cookie is the operator's secret: it goes no further.
	r = r.Clone(r.Context())
	r.Header.Del("Cookie")
	g.next.ServeHTTP(w, r)
}

// valid compares a token given with the dashboard's in constant time.
func (g *dashboardGate) valid(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(g.token)) == 1
}

// dashboardRoutes are the JSON routes the port passes on (GET and HEAD
// only) beside the pages: the API's reads of jobs and fencing records.
// The store's check and backup, drain and metrics stay the socket's.
var dashboardRoutes = []string{"/v1/jobs", "/v1/overview", "/v1/lookup", "/v1/changes", "/v1/capabilities", "/v1/hosts",
	"/v1/neuron", "/v1/grant", "/v1/placement", "/v1/acts", "/v1/progs", "/v1/invocations", "/v1/operations"}

// dashboardPath says whether the port passes path on: the pages, and the
// JSON routes of dashboardRoutes (the route or below it).
func dashboardPath(path string) bool {
	if strings.HasPrefix(path, "/ui/") {
		return true
	}
	for _, p := range dashboardRoutes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// refuse answers a refusal as the API answers errors.
func refuse(w http.ResponseWriter, status int, err *protocol.Error) {
	writeReaderError(w, status, err)
}

// headerWriter sets dashboardHeaders as the answer's status is written,
// over whatever the handler behind set: every answer carries them, and
// one value each.
type headerWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *headerWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		for _, h := range dashboardHeaders {
			w.ResponseWriter.Header().Set(h[0], h[1])
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *headerWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (flushes of
// a streamed answer).
func (w *headerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes a flush on (an event stream, a long poll's answer).
func (w *headerWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// loopbackListen checks that addr is a loopback address with a port:
// the dashboard answers with the operator's rights, never on a network.
func loopbackListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen %s: want HOST:PORT on loopback, such as 127.0.0.1:8080", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return usagef("--listen %s: port %q is not a port number", addr, port)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return usagef("--listen %s: not a loopback address (127.0.0.1, ::1 or localhost): the dashboard answers with the operator's rights and is never served on a network; reach a remote host's with ssh -L", addr)
	}
	return nil
}
