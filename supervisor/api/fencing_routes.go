package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fenceservice"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The routes of local dispatch and fencing, beside the job routes.
func (s *Server) registerFencing(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/neuron", s.neuronShow)
	mux.HandleFunc("POST /v1/neuron", s.neuronInit)
	mux.HandleFunc("POST /v1/neuron/policy", s.neuronPolicy)
	mux.HandleFunc("GET /v1/grant", s.grantShow)
	mux.HandleFunc("PUT /v1/grant", s.grantSet)
	mux.HandleFunc("GET /v1/placement", s.placementShow)
	mux.HandleFunc("POST /v1/placement/bind", s.placementMove(true))
	mux.HandleFunc("POST /v1/placement/release", s.placementMove(false))
	mux.HandleFunc("GET /v1/acts", s.actsList)
	mux.HandleFunc("GET /v1/progs", s.progsList)
	mux.HandleFunc("POST /v1/progs", s.progInstall)
	mux.HandleFunc("GET /v1/progs/{id}", s.onRecord("prog", http.StatusOK, s.progShow))
	mux.HandleFunc("POST /v1/progs/{id}/pause", s.progMove("pause"))
	mux.HandleFunc("POST /v1/progs/{id}/resume", s.progMove("resume"))
	mux.HandleFunc("POST /v1/progs/{id}/retire", s.progMove("retire"))
	mux.HandleFunc("POST /v1/progs/{id}/upgrade", s.progUpgrade)
	mux.HandleFunc("GET /v1/progs/{id}/revisions", s.onRecord("prog", http.StatusOK, s.progRevisions))
	mux.HandleFunc("GET /v1/invocations", s.invocationsList)
	mux.HandleFunc("POST /v1/invocations", s.invoke)
	mux.HandleFunc("GET /v1/invocations/{id}", s.onRecord("invocation", http.StatusOK, s.invocationShow))
	mux.HandleFunc("GET /v1/invocations/{id}/wait", s.onRecord("invocation", http.StatusOK, s.invocationWait))
	mux.HandleFunc("POST /v1/invocations/{id}/cancel", s.invocationMove("cancel"))
	mux.HandleFunc("POST /v1/invocations/{id}/archive", s.invocationMove("archive"))
	mux.HandleFunc("POST /v1/invocations/{id}/rebind", s.invocationMove("rebind"))
	mux.HandleFunc("POST /v1/invocations/{id}/take", s.onRecord("invocation", http.StatusCreated, s.take))
	mux.HandleFunc("GET /v1/operations", s.operationsList)
	mux.HandleFunc("GET /v1/operations/{id}", s.onRecord("operation", http.StatusOK, s.operationShow))
	mux.HandleFunc("POST /v1/operations/{id}/reconcile", s.reconcile)
}

// maxFencingBody bounds a fencing request's body: a prog's bundle at most.
const maxFencingBody = protocol.MaxBundleBytes + 1<<16

// refusalStatus is the HTTP status of a refusal (docs/fencing.md,
// "Refusals"): its code's, but for two refusals HTTP says more than
// their code, invalid_job: a record that does not exist (404) and one in
// a state that does not allow the action (409).
func refusalStatus(r fencing.Refusal) int {
	switch r {
	case fencing.Missing:
		return http.StatusNotFound
	case fencing.Lifecycle:
		return http.StatusConflict
	}
	return r.Code().HTTPStatus()
}

// writeFencingError answers an engine error: a refusal with its code and
// status, anything else as the job routes do.
func (s *Server) writeFencingError(w http.ResponseWriter, r *http.Request, err error) {
	if e, ok := fencing.AsRefusal(err); ok {
		s.writeErrorStatus(w, r, refusalStatus(e.Refusal), fencing.ProtocolError(err))
		return
	}
	s.writeStoreError(w, r, err)
}

// decodeBody reads a request body strictly: one JSON object, no key
// twice, no key the body type does not have, nothing after it.
func decodeBody(raw []byte, v any) error {
	bad := func(format string, args ...any) error {
		return protocol.Errorf(protocol.CodeInvalidJob, "request body: "+format, args...)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return bad("want a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad("malformed JSON")
		}
		key, _ := tok.(string)
		if seen[key] {
			return bad("key %s given twice", protocol.QuotePrefix(key))
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return bad("malformed JSON")
		}
	}
	strict := json.NewDecoder(bytes.NewReader(raw))
	strict.DisallowUnknownFields()
	if err := strict.Decode(v); err != nil {
		return bad("%s", protocol.SafeMessage(err.Error()))
	}
	if strict.More() {
		return bad("data after the object")
	}
	return nil
}

// body reads and decodes a fencing route's body (no query).
func (s *Server) body(w http.ResponseWriter, r *http.Request, v any) error {
	if _, err := query(r); err != nil {
		return err
	}
	raw, release, err := s.readBody(w, r, maxFencingBody)
	defer release()
	if err != nil {
		return bodyError(err, maxFencingBody)
	}
	return decodeBody(raw, v)
}

// recordID is the {id} of a route: a record id (64 hex digits).
// onRecord serves a route on the record its path names that takes no
// body: fn's answer with status, or the refusal that stopped it.
func (s *Server) onRecord(what string, status int, fn func(ctx context.Context, id string) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := recordID(r, what)
		if err == nil {
			err = s.bodiless(w, r)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := fn(r.Context(), id)
		if err != nil {
			s.writeFencingError(w, r, err)
			return
		}
		s.writeJSON(w, status, out)
	}
}

func recordID(r *http.Request, what string) (string, error) {
	id := r.PathValue("id")
	if !fenceservice.ValidID(id) {
		return "", protocol.Errorf(protocol.CodeInvalidJob, "%s id %s: want 64 lowercase hex digits", what, protocol.QuotePrefix(id))
	}
	return id, nil
}

// fence is the fencing service over the daemon's engine, whose writes
// the daemon's drivers follow.
func (s *Server) fence() *fenceservice.Service {
	return fenceservice.New(s.sup.Fencing(), daemonScheduler{s.sup})
}

// daemonScheduler is the daemon as the fencing service's Scheduler: its
// drivers run what a write let go on.
type daemonScheduler struct{ *supervisor.Supervisor }

// Start queues the new invocation's drive; the answer is the invocation
// as it was made.
func (d daemonScheduler) Start(_ context.Context, inv *store.Invocation) (*store.Invocation, error) {
	d.RunInvocation(inv.ID)
	return inv, nil
}

// bodilessRoute serves a route that takes neither a body nor a query:
// fn's answer (200), or the error that stopped it.
func (s *Server) bodilessRoute(w http.ResponseWriter, r *http.Request, fn func(context.Context) (any, error)) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := fn(r.Context())
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

// bodyRoute serves a route that takes a body: it decodes the body into
// v, then answers fn's reply with its status, or the error that stopped it.
func (s *Server) bodyRoute(w http.ResponseWriter, r *http.Request, v any, fn func(context.Context) (any, int, error)) {
	if err := s.body(w, r, v); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, status, err := fn(r.Context())
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, status, out)
}
