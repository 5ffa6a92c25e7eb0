package ui

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// pageNames are the templates/*.html that are pages (each is rendered
// into layout.html).
var pageNames = []string{"overview", "jobs", "job", "hosts", "fencing", "error"}

// pages are the parsed templates, one set per page.
type pages struct {
	set map[string]*template.Template
}

func mustParsePages(cli func(string) string) *pages {
	p := &pages{set: map[string]*template.Template{}}
	for _, name := range pageNames {
		t := template.Must(template.New("layout.html").Funcs(funcs).Funcs(template.FuncMap{"cli": cli}).ParseFS(files,
			"templates/layout.html", "templates/parts.html", "templates/"+name+".html"))
		p.set[name] = t
	}
	return p
}

// frame is what layout.html shows around a page's content.
type frame struct {
	Title   string
	Nav     string // the nav entry to mark current
	Version string
	Poll    int64 // ms
	Now     time.Time
	// Filters is the part of the page the live update leaves alone (a
	// form the operator may be typing in).
	Filters template.HTML
	Content template.HTML
	// Tag names the content's version: the live update asks with it and
	// swaps only when the page changed.
	Tag string
}

// render writes the page name with data as the answer. The content's
// hash is its ETag: a live update that asks with If-None-Match gets 304
// when nothing changed.
func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	t := h.pages.set[name]
	var content, filters bytes.Buffer
	if err := t.ExecuteTemplate(&content, "content", data); err != nil {
		h.templateFailed(w, r, name, err)
		return
	}
	if t.Lookup("filters") != nil {
		if err := t.ExecuteTemplate(&filters, "filters", data); err != nil {
			h.templateFailed(w, r, name, err)
			return
		}
	}
	sum := sha256.Sum256(content.Bytes())
	tag := `"` + hex.EncodeToString(sum[:12]) + `"`
	w.Header().Set("ETag", tag)
	if status == http.StatusOK && r.Header.Get("If-None-Match") == tag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	f := frame{Title: title, Nav: name, Version: h.opts.Version, Poll: h.opts.Poll.Milliseconds(), Now: h.opts.Now().UTC(),
		Filters: template.HTML(filters.String()), Content: template.HTML(content.String()), Tag: tag}
	var out bytes.Buffer
	if err := t.ExecuteTemplate(&out, "layout.html", f); err != nil {
		h.templateFailed(w, r, name, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(out.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(out.Bytes())
	}
}

func (h *handler) templateFailed(w http.ResponseWriter, r *http.Request, name string, err error) {
	h.log.Error("ui: render a page", "page", name, "err", err)
	http.Error(w, "internal_error: rendering the page failed", http.StatusInternalServerError)
}

// errorPage is what the error template shows.
type errorPage struct {
	Status int
	Err    *protocol.Error
	Path   string
}

// fail answers err as a page, with status (0: the error code's).
func (h *handler) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	pe := protocol.AsError(err)
	if status == 0 {
		status = pe.Code.HTTPStatus()
	}
	if pe.Code == protocol.CodeInternalError || pe.Code == protocol.CodeIOError {
		h.log.Error("ui: page failed", "path", protocol.QuotePrefix(r.URL.Path), "err", err)
	}
	e := &protocol.Error{Code: pe.Code, Message: protocol.SafeMessage(pe.Message), Retryable: pe.Retryable}
	h.render(w, r, status, "error", http.StatusText(status), errorPage{Status: status, Err: e, Path: protocol.QuotePrefix(r.URL.Path)})
}
