package api

import (
	"context"
	"net/http"
)

// The neuron, its grant, its placement and the registered acts: each
// handler parses, calls the fencing service, and answers.

func (s *Server) neuronShow(w http.ResponseWriter, r *http.Request) {
	s.bodilessRoute(w, r, func(ctx context.Context) (any, error) { return s.fence().Neuron(ctx) })
}

func (s *Server) neuronInit(w http.ResponseWriter, r *http.Request) {
	var body NeuronInitBody
	s.bodyRoute(w, r, &body, func(ctx context.Context) (any, int, error) {
		rep, err := s.fence().InitNeuron(ctx, body.Network)
		return rep, http.StatusCreated, err
	})
}

func (s *Server) neuronPolicy(w http.ResponseWriter, r *http.Request) {
	var body PolicyBody
	s.bodyRoute(w, r, &body, func(ctx context.Context) (any, int, error) {
		root, err := s.fence().ChangePolicy(ctx, body.Policy, body.Epoch)
		return root, http.StatusOK, err
	})
}

func (s *Server) grantShow(w http.ResponseWriter, r *http.Request) {
	s.bodilessRoute(w, r, func(ctx context.Context) (any, error) { return s.fence().Grant(ctx) })
}

func (s *Server) grantSet(w http.ResponseWriter, r *http.Request) {
	var body GrantBody
	s.bodyRoute(w, r, &body, func(ctx context.Context) (any, int, error) {
		g, err := s.fence().SetGrant(ctx, body)
		return g, http.StatusOK, err
	})
}

func (s *Server) placementShow(w http.ResponseWriter, r *http.Request) {
	s.bodilessRoute(w, r, func(ctx context.Context) (any, error) { return s.fence().Placement(ctx) })
}

func (s *Server) placementMove(bind bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body PlacementBody
		s.bodyRoute(w, r, &body, func(ctx context.Context) (any, int, error) {
			move := s.fence().Release
			if bind {
				move = s.fence().Bind
			}
			root, err := move(ctx, body.Generation)
			return root, http.StatusOK, err
		})
	}
}

func (s *Server) actsList(w http.ResponseWriter, r *http.Request) {
	s.bodilessRoute(w, r, func(ctx context.Context) (any, error) { return s.fence().Acts(ctx) })
}
