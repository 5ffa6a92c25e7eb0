package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
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
	mux.HandleFunc("GET /v1/progs/{id}", s.progShow)
	mux.HandleFunc("POST /v1/progs/{id}/pause", s.progMove("pause"))
	mux.HandleFunc("POST /v1/progs/{id}/resume", s.progMove("resume"))
	mux.HandleFunc("POST /v1/progs/{id}/retire", s.progMove("retire"))
	mux.HandleFunc("POST /v1/progs/{id}/upgrade", s.progUpgrade)
	mux.HandleFunc("GET /v1/progs/{id}/revisions", s.progRevisions)
	mux.HandleFunc("GET /v1/invocations", s.invocationsList)
	mux.HandleFunc("POST /v1/invocations", s.invoke)
	mux.HandleFunc("GET /v1/invocations/{id}", s.invocationShow)
	mux.HandleFunc("GET /v1/invocations/{id}/wait", s.invocationWait)
	mux.HandleFunc("POST /v1/invocations/{id}/cancel", s.invocationMove("cancel"))
	mux.HandleFunc("POST /v1/invocations/{id}/archive", s.invocationMove("archive"))
	mux.HandleFunc("POST /v1/invocations/{id}/rebind", s.invocationMove("rebind"))
	mux.HandleFunc("POST /v1/invocations/{id}/take", s.take)
	mux.HandleFunc("GET /v1/operations", s.operationsList)
	mux.HandleFunc("GET /v1/operations/{id}", s.operationShow)
	mux.HandleFunc("POST /v1/operations/{id}/reconcile", s.reconcile)
}

// maxFencingBody bounds a fencing request's body: a prog's bundle at most.
const maxFencingBody = protocol.MaxBundleBytes + 1<<16

// fencingStatus is the HTTP status of a refusal (docs/fencing.md,
// "Refusals").
func fencingStatus(r fencing.Refusal) int {
	switch r {
	case fencing.Denied:
		return http.StatusForbidden
	case fencing.Busy:
		return http.StatusServiceUnavailable
	case fencing.Unsupported:
		return http.StatusUnprocessableEntity
	case fencing.Missing:
		return http.StatusNotFound
	}
	return http.StatusConflict // fenced, conflict, unknown outcome, lifecycle, budget
}

// writeFencingError answers an engine error: a refusal with its code and
// status, anything else as the job routes do.
func (s *Server) writeFencingError(w http.ResponseWriter, r *http.Request, err error) {
	if e, ok := fencing.AsRefusal(err); ok {
		s.writeErrorStatus(w, r, fencingStatus(e.Refusal), fencing.ProtocolError(err))
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
func recordID(r *http.Request, what string) (string, error) {
	id := r.PathValue("id")
	if len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
		return "", protocol.Errorf(protocol.CodeInvalidJob, "%s id %s: want 64 lowercase hex digits", what, protocol.QuotePrefix(id))
	}
	return id, nil
}

func (s *Server) engine() *fencing.Engine { return s.sup.Fencing() }

func (s *Server) neuronReply(ctx context.Context) (*NeuronReply, error) {
	e := s.engine()
	root, err := e.Root(ctx)
	if err != nil {
		return nil, err
	}
	g, err := e.Grant(ctx)
	if err != nil {
		return nil, err
	}
	return &NeuronReply{Root: root, Grant: g, Worker: e.Descriptor(root.Network)}, nil
}

func (s *Server) neuronShow(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	rep, err := s.neuronReply(r.Context())
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, rep)
}

func (s *Server) neuronInit(w http.ResponseWriter, r *http.Request) {
	var body NeuronInitBody
	if err := s.body(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, _, err := s.engine().InitNeuron(r.Context(), body.Network); err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	// The daemon's own worker is bound at once, as at every start.
	s.sup.BindBoot(r.Context())
	rep, err := s.neuronReply(r.Context())
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusCreated, rep)
}

func (s *Server) neuronPolicy(w http.ResponseWriter, r *http.Request) {
	var body PolicyBody
	if err := s.body(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	root, err := s.engine().ChangePolicy(r.Context(), body.Policy, body.Epoch)
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, root)
}

func (s *Server) grantShow(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	g, err := s.engine().Grant(r.Context())
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, g)
}

// resolveActs reads act names or tags with the daemon's registry.
func (s *Server) resolveActs(names []string) ([]uint64, error) {
	tags, err := s.engine().Acts().ResolveList(strings.Join(names, ","))
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "%s", protocol.SafeMessage(err.Error()))
	}
	return tags, nil
}

func (s *Server) grantSet(w http.ResponseWriter, r *http.Request) {
	var body GrantBody
	if err := s.body(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	tags, err := s.resolveActs(body.Acts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	g, err := s.engine().SetGrant(r.Context(), body.Revision, fencing.GrantSpec{Acts: tags, Progs: body.Progs, Disabled: body.Disabled})
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	// A grant may let waiting invocations go on.
	s.sup.RunAll()
	s.writeJSON(w, http.StatusOK, g)
}

func (s *Server) placementShow(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	root, err := s.engine().Root(r.Context())
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, root)
}

func (s *Server) placementMove(bind bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body PlacementBody
		if err := s.body(w, r, &body); err != nil {
			s.writeError(w, r, err)
			return
		}
		var root *store.Root
		var err error
		if bind {
			root, err = s.engine().Bind(r.Context(), body.Generation)
		} else {
			root, err = s.engine().Release(r.Context(), body.Generation)
		}
		if err != nil {
			s.writeFencingError(w, r, err)
			return
		}
		if bind {
			s.sup.RunAll()
		}
		s.writeJSON(w, http.StatusOK, root)
	}
}

func (s *Server) actsList(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	reg := s.engine().Acts()
	out := []ActInfo{}
	for _, t := range reg.Tags() {
		out = append(out, ActInfo{Name: reg.Name(t), Tag: t, Hex: hostact.FormatTag(t)})
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) progsList(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	ps, err := s.engine().Progs(r.Context())
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	if ps == nil {
		ps = []*store.Prog{}
	}
	s.writeJSON(w, http.StatusOK, ps)
}

// ProgSpecOf reads a prog install body (the bundle, its acts resolved).
func ProgSpecOf(bundle []byte, tags []uint64, stepLimit, maxInFlight uint64) (fencing.ProgSpec, error) {
	p, err := protocol.ParseBundle(bundle)
	if err != nil {
		return fencing.ProgSpec{}, err
	}
	return fencing.ProgSpec{Program: p.Formula, Name: p.Name, Acts: tags, StepLimit: stepLimit, MaxInFlight: maxInFlight}, nil
}

func (s *Server) progInstall(w http.ResponseWriter, r *http.Request) {
	var body ProgBody
	if err := s.body(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	tags, err := s.resolveActs(body.Acts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	spec, err := ProgSpecOf(body.Bundle, tags, body.StepLimit, body.MaxInFlight)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, created, err := s.engine().InstallProg(r.Context(), spec)
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	s.writeJSON(w, status, ProgReply{Prog: p, Created: created})
}

func (s *Server) progShow(w http.ResponseWriter, r *http.Request) {
	id, err := recordID(r, "prog")
	if err == nil {
		err = s.bodiless(w, r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.engine().Prog(r.Context(), id)
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, p)
}

func (s *Server) progMove(action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := recordID(r, "prog")
		if err == nil {
			err = s.bodiless(w, r)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		e := s.engine()
		var p *store.Prog
		switch action {
		case "pause":
			p, err = e.PauseProg(r.Context(), id)
		case "resume":
			p, err = e.ResumeProg(r.Context(), id)
		default:
			p, err = e.RetireProg(r.Context(), id)
		}
		if err != nil {
			s.writeFencingError(w, r, err)
			return
		}
		if action == "resume" {
			s.sup.RunAll()
		}
		s.writeJSON(w, http.StatusOK, p)
	}
}

func (s *Server) invocationsList(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	invs, err := s.engine().Invocations(r.Context())
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	if invs == nil {
		invs = []*store.Invocation{}
	}
	s.writeJSON(w, http.StatusOK, invs)
}

func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	var body InvokeBody
	if err := s.body(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Parent != "" && (len(body.Parent) != 64 || strings.Trim(body.Parent, "0123456789abcdef") != "") {
		s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "parent id %s: want 64 lowercase hex digits", protocol.QuotePrefix(body.Parent)))
		return
	}
	inv, err := s.engine().InvokeWith(r.Context(), fencing.InvokeSpec{Prog: body.Prog, Inputs: body.Inputs, Parent: body.Parent, Allowance: body.Steps})
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.sup.RunInvocation(inv.ID)
	s.writeJSON(w, http.StatusCreated, inv)
}

func (s *Server) invocationShow(w http.ResponseWriter, r *http.Request) {
	id, err := recordID(r, "invocation")
	if err == nil {
		err = s.bodiless(w, r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.engine().Invocation(r.Context(), id)
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, v)
}

// invocationWait long-polls until the invocation has ended, at most
// the long-poll bound; the answer is the invocation either way (clients poll again).
func (s *Server) invocationWait(w http.ResponseWriter, r *http.Request) {
	id, err := recordID(r, "invocation")
	if err == nil {
		err = s.bodiless(w, r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.LongPoll)
	defer cancel()
	v, err := s.sup.WaitInvocation(ctx, id)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, v)
}

func (s *Server) invocationMove(action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := recordID(r, "invocation")
		if err == nil {
			err = s.bodiless(w, r)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		e := s.engine()
		var out any
		switch action {
		case "cancel":
			out, err = e.Cancel(r.Context(), id, "")
		case "archive":
			if err = e.Archive(r.Context(), id); err == nil {
				out, err = e.Invocation(r.Context(), id)
			}
		default:
			out, err = e.Rebind(r.Context(), id)
			if err == nil {
				s.sup.RunInvocation(id)
			}
		}
		if err != nil {
			s.writeFencingError(w, r, err)
			return
		}
		s.writeJSON(w, http.StatusOK, out)
	}
}

func (s *Server) take(w http.ResponseWriter, r *http.Request) {
	id, err := recordID(r, "invocation")
	if err == nil {
		err = s.bodiless(w, r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.engine().Take(r.Context(), id)
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusCreated, a)
}

func (s *Server) operationsList(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "invocation")
	if err == nil {
		err = s.noBody(w, r)
	}
	inv := q["invocation"]
	if err == nil && inv != "" && (len(inv) != 64 || strings.Trim(inv, "0123456789abcdef") != "") {
		err = protocol.Errorf(protocol.CodeInvalidJob, "invocation id %s: want 64 lowercase hex digits", protocol.QuotePrefix(inv))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ops, err := s.engine().Operations(r.Context(), inv)
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, ops)
}

func (s *Server) operationShow(w http.ResponseWriter, r *http.Request) {
	id, err := recordID(r, "operation")
	if err == nil {
		err = s.bodiless(w, r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	op, err := s.engine().Operation(r.Context(), id)
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, op)
}

// OutcomeSpecOf reads a reconciliation: a value in nox text (canonical
// literals) or a failure message, exactly one.
func OutcomeSpecOf(value, failed *string) (fencing.OutcomeSpec, error) {
	switch {
	case (value == nil) == (failed == nil):
		return fencing.OutcomeSpec{}, protocol.Errorf(protocol.CodeInvalidJob, "give exactly one of a value and a failure")
	case failed != nil:
		if !protocol.ValidText(*failed) {
			return fencing.OutcomeSpec{}, protocol.Errorf(protocol.CodeInvalidJob, "the failure message: want 1-%d printable ASCII characters", protocol.MaxTextBytes)
		}
		return fencing.OutcomeSpec{Failed: true, Message: *failed}, nil
	}
	n, err := noun.ParseWith(*value, noun.ParseOptions{Literals: noun.CanonicalLiterals, MaxNodes: 1 << 16})
	if err != nil {
		return fencing.OutcomeSpec{}, protocol.Errorf(protocol.CodeInvalidJob, "the value: %s", protocol.SafeMessage(err.Error()))
	}
	return fencing.OutcomeSpec{Value: n}, nil
}

func (s *Server) reconcile(w http.ResponseWriter, r *http.Request) {
	id, err := recordID(r, "operation")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var body ReconcileBody
	if err := s.body(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Attempt == 0 {
		s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "attempt: want the attempt's number (1 or more)"))
		return
	}
	spec, err := OutcomeSpecOf(body.Value, body.Failed)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e := s.engine()
	o, recorded, err := e.Reconcile(r.Context(), id, body.Attempt, spec)
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	if v, err := e.Operation(r.Context(), id); err == nil {
		s.sup.RunInvocation(v.Invocation)
	}
	s.writeJSON(w, http.StatusOK, ReconcileReply{Outcome: o, Recorded: recorded})
}
