package api

import (
	"context"
	"net/http"
)

// Invocations and their operations: invoke, wait, the management moves,
// a manual take and reconciliation.

func (s *Server) invocationsList(w http.ResponseWriter, r *http.Request) {
	s.bodilessRoute(w, r, func(ctx context.Context) (any, error) { return s.fence().Invocations(ctx) })
}

func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	var body InvokeBody
	s.bodyRoute(w, r, &body, func(ctx context.Context) (any, int, error) {
		inv, err := s.fence().InvokeWith(ctx, body)
		return inv, http.StatusCreated, err
	})
}

func (s *Server) invocationShow(ctx context.Context, id string) (any, error) {
	return s.fence().Invocation(ctx, id)
}

// invocationWait long-polls until the invocation has ended, at most
// the long-poll bound; the answer is the invocation either way (clients poll again).
func (s *Server) invocationWait(request context.Context, id string) (any, error) {
	ctx, cancel := s.pollContext(request)
	defer cancel()
	v, err := s.fence().WaitInvocation(ctx, id)
	if pollEnded(err, ctx, request) {
		// Perhaps before the invocation could be read: it is read again.
		return s.fence().Invocation(request, id)
	}
	return v, err
}

func (s *Server) invocationMove(action string) http.HandlerFunc {
	return s.onRecord("invocation", http.StatusOK, func(ctx context.Context, id string) (any, error) {
		svc := s.fence()
		switch action {
		case "cancel":
			return svc.CancelInvocation(ctx, id)
		case "archive":
			return svc.ArchiveInvocation(ctx, id)
		default:
			return svc.RebindInvocation(ctx, id)
		}
	})
}

func (s *Server) take(ctx context.Context, id string) (any, error) {
	return s.fence().Take(ctx, id)
}

func (s *Server) operationsList(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "invocation")
	if err == nil {
		err = s.noBody(w, r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ops, err := s.fence().Operations(r.Context(), q["invocation"])
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, ops)
}

func (s *Server) operationShow(ctx context.Context, id string) (any, error) {
	return s.fence().Operation(ctx, id)
}

func (s *Server) reconcile(w http.ResponseWriter, r *http.Request) {
	id, err := recordID(r, "operation")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var body ReconcileBody
	s.bodyRoute(w, r, &body, func(ctx context.Context) (any, int, error) {
		rep, err := s.fence().Reconcile(ctx, id, body)
		return rep, http.StatusOK, err
	})
}
