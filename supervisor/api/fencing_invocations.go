package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Invocations and their operations: invoke, wait, the management moves,
// a manual take and reconciliation.

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

func (s *Server) invocationShow(ctx context.Context, id string) (any, error) {
	return s.engine().Invocation(ctx, id)
}

// invocationWait long-polls until the invocation has ended, at most
// the long-poll bound; the answer is the invocation either way (clients poll again).
func (s *Server) invocationWait(request context.Context, id string) (any, error) {
	ctx, cancel := s.pollContext(request)
	defer cancel()
	v, err := s.sup.WaitInvocation(ctx, id)
	if pollEnded(err, ctx, request) {
		// Perhaps before the invocation could be read: it is read again.
		return s.engine().Invocation(request, id)
	}
	return v, err
}

func (s *Server) invocationMove(action string) http.HandlerFunc {
	return s.onRecord("invocation", http.StatusOK, func(ctx context.Context, id string) (any, error) {
		e := s.engine()
		switch action {
		case "cancel":
			return e.Cancel(ctx, id, "")
		case "archive":
			if err := e.Archive(ctx, id); err != nil {
				return nil, err
			}
			return e.Invocation(ctx, id)
		default:
			inv, err := e.Rebind(ctx, id)
			if err == nil {
				s.sup.RunInvocation(id)
			}
			return inv, err
		}
	})
}

func (s *Server) take(ctx context.Context, id string) (any, error) {
	return s.engine().Take(ctx, id)
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

func (s *Server) operationShow(ctx context.Context, id string) (any, error) {
	return s.engine().Operation(ctx, id)
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
