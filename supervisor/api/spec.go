package api

import (
	"context"
	"net/http"
	"net/url"
)

// spec answers the job's frozen spec: the canonical contract JSON it
// was admitted with.
func (s *Server) spec(w http.ResponseWriter, r *http.Request) {
	id, err := s.bodilessJobRequest(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	raw, err := s.sup.Spec(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeRaw(w, http.StatusOK, raw)
}

// Spec is the job's frozen spec (canonical contract JSON).
func (c *Client) Spec(ctx context.Context, id string) ([]byte, error) {
	var raw []byte
	if err := c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id)+"/spec", nil, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}
