package api

import (
	"context"
	"net/http"
)

// Installed progs: their list, installation, details and lifecycle.

func (s *Server) progsList(w http.ResponseWriter, r *http.Request) {
	s.bodilessRoute(w, r, func(ctx context.Context) (any, error) { return s.fence().Progs(ctx) })
}

func (s *Server) progInstall(w http.ResponseWriter, r *http.Request) {
	var body ProgBody
	s.bodyRoute(w, r, &body, func(ctx context.Context) (any, int, error) {
		rep, err := s.fence().InstallProg(ctx, body)
		if err != nil {
			return nil, 0, err
		}
		return rep, createdStatus(rep.Created), nil
	})
}

func (s *Server) progShow(ctx context.Context, id string) (any, error) {
	return s.fence().Prog(ctx, id)
}

func (s *Server) progMove(action string) http.HandlerFunc {
	return s.onRecord("prog", http.StatusOK, func(ctx context.Context, id string) (any, error) {
		svc := s.fence()
		switch action {
		case "pause":
			return svc.PauseProg(ctx, id)
		case "resume":
			return svc.ResumeProg(ctx, id)
		default:
			return svc.RetireProg(ctx, id)
		}
	})
}
