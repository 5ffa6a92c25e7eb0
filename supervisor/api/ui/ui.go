// Package ui is the daemon's read-only dashboard: server-rendered pages
// under /ui/ (overview, jobs, a job, hosts, fencing), their stylesheet
// and their one small script, all embedded in the binary.
//
// The pages read through a Source: the API server's own reads (the same
// supervisor calls and conversions as its JSON routes), so a page never
// shows what the JSON API would not. They take GET and HEAD only and
// carry no action: where one fits, the page shows the exact CLI command.
// Nothing is inline (no script, no style attribute), so a strict
// Content-Security-Policy (default-src 'self') allows every page; without
// JavaScript every page still shows everything and a reload refreshes
// it. With JavaScript the script polls the page it shows and swaps in
// what changed, with a pause (docs/dashboard.md).
package ui

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fenceservice"
)

// Prefix is where the pages are served: every link of a page starts
// with it.
const Prefix = "/ui/"

// Source is what the pages read: each method answers as the JSON route
// of the same name does (the API server implements it over its
// supervisor; errors are *protocol.Error where the route would answer
// one).
type Source interface {
	// Overview is GET /v1/overview.
	Overview(ctx context.Context) (*apitypes.Overview, error)
	// ListJobs is GET /v1/jobs with a query: one page.
	ListJobs(ctx context.Context, q apitypes.JobQuery) (*apitypes.JobPage, error)
	// FindJob resolves a job id or a unique prefix of one to the id.
	FindJob(ctx context.Context, prefix string) (string, error)
	// Status is GET /v1/jobs/{id}.
	Status(ctx context.Context, id string) (*apitypes.JobStatus, error)
	// Events is GET /v1/jobs/{id}/events.
	Events(ctx context.Context, id string) ([]apitypes.Event, error)
	// Spec is the job's frozen spec (canonical contract JSON).
	Spec(ctx context.Context, id string) ([]byte, error)
	// Hosts is GET /v1/hosts: the hosts and the store they share.
	Hosts(ctx context.Context) (*apitypes.HostsReply, error)
	// Capabilities is GET /v1/capabilities.
	Capabilities(ctx context.Context) (*apitypes.CapabilitiesReply, error)
	// Neuron is GET /v1/neuron: the root and grant (nil root: the home
	// has no neuron yet).
	Neuron(ctx context.Context) (*fenceservice.NeuronReply, error)
	// Acts is GET /v1/acts: the registered acts' names and tags.
	Acts(ctx context.Context) ([]fenceservice.ActInfo, error)
	// Progs is GET /v1/progs.
	Progs(ctx context.Context) ([]*apitypes.Prog, error)
	// InvocationDigest is the invocations counted by status with the
	// newest few, and the operations with an unknown attempt (at most
	// maxUnknown): GET /v1/invocations and /v1/operations digested in one
	// pass each, so that the page holds a bounded amount however many
	// the store has.
	InvocationDigest(ctx context.Context, newest, maxUnknown int) (*fenceservice.InvocationDigest, error)
}

// Options shape the pages.
type Options struct {
	// Version is the daemon's build, shown in the footer (default: the
	// binary's build info).
	Version string
	// Poll is how often the page's script asks for the page again
	// (default 2 s).
	Poll time.Duration
	// Now is the clock ages are measured with (default time.Now).
	Now func() time.Time
	// Logger gets the failures of the pages' own (a template's).
	Logger *slog.Logger
	// Home is the daemon's home: the CLI commands the pages show name it
	// (--home), so that they run as shown whatever the reader's default.
	Home string
}

//go:embed static templates
var files embed.FS

// handler serves the pages.
type handler struct {
	src    Source
	opts   Options
	pages  *pages
	static http.Handler
	// files are the static files the static handler serves: a name
	// that is none of them is the dashboard's own 404, not the file
	// server's plain-text one.
	files fs.FS
	log   *slog.Logger
}

// New is the dashboard's handler: everything under Prefix (pages,
// static files), and Prefix without its slash (a redirect to it). It
// answers GET and HEAD only (405 otherwise).
func New(src Source, opts Options) http.Handler {
	if opts.Poll <= 0 {
		opts.Poll = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Version == "" {
		opts.Version = buildVersion()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree is the binary's own
	}
	h := &handler{src: src, opts: opts, log: log, files: static}
	h.pages = mustParsePages(h.cli)
	h.static = http.StripPrefix(Prefix+"static/", http.FileServerFS(static))
	return h
}

// cli is the CLI command with args, on this daemon's home.
func (h *handler) cli(args string) string {
	if h.opts.Home == "" {
		return "cyber-supervisor " + args
	}
	return "cyber-supervisor --home " + shellQuote(h.opts.Home) + " " + args
}

// ContentSecurityPolicy is the policy every answer carries: nothing but
// the dashboard's own files, no inline script or style, no framing, no
// form sent elsewhere. The pages are written to it (no inline anything).
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		h.fail(w, r, http.StatusMethodNotAllowed, protocol.Errorf(protocol.CodeInvalidJob,
			"%s %s: the dashboard is read-only (GET and HEAD)", methodOf(r), protocol.QuotePrefix(r.URL.Path)))
		return
	}
	p := r.URL.Path
	if p+"/" == Prefix {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	if !strings.HasPrefix(p, Prefix) {
		h.notFound(w, r)
		return
	}
	rest := strings.TrimPrefix(p, Prefix)
	switch {
	case rest == "":
		h.overview(w, r)
	case rest == "jobs":
		h.jobs(w, r)
	case strings.HasPrefix(rest, "jobs/") && !strings.Contains(rest[len("jobs/"):], "/"):
		h.job(w, r, rest[len("jobs/"):])
	case rest == "hosts":
		h.hosts(w, r)
	case rest == "fencing":
		h.fencing(w, r)
	case strings.HasPrefix(rest, "static/") && h.isStaticFile(rest[len("static/"):]):
		hd.Set("Cache-Control", "no-cache")
		h.static.ServeHTTP(w, r)
	default:
		h.notFound(w, r)
	}
}

// isStaticFile reports whether name is one of the static files (not a
// directory, which the file server would list or redirect).
func (h *handler) isStaticFile(name string) bool {
	st, err := fs.Stat(h.files, name)
	return err == nil && !st.IsDir()
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.fail(w, r, http.StatusNotFound, protocol.Errorf(protocol.CodeInvalidJob, "no such page: %s", protocol.QuotePrefix(r.URL.Path)))
}

// buildVersion is the binary's module version and VCS revision.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}

// methodOf names the request's method for messages.
func methodOf(r *http.Request) string {
	if len(r.Method) <= 16 {
		return r.Method
	}
	return protocol.QuotePrefix(r.Method)
}
