package api

import (
	"context"
	"net/http"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Installed progs: their list, installation, details and lifecycle.

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
	s.writeJSON(w, createdStatus(created), ProgReply{Prog: p, Created: created})
}

func (s *Server) progShow(ctx context.Context, id string) (any, error) {
	return s.engine().Prog(ctx, id)
}

func (s *Server) progMove(action string) http.HandlerFunc {
	return s.onRecord("prog", http.StatusOK, func(ctx context.Context, id string) (any, error) {
		e := s.engine()
		switch action {
		case "pause":
			return e.PauseProg(ctx, id)
		case "resume":
			p, err := e.ResumeProg(ctx, id)
			if err == nil {
				s.sup.RunAll()
			}
			return p, err
		default:
			return e.RetireProg(ctx, id)
		}
	})
}
