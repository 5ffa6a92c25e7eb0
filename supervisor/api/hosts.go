package api

import (
	"context"
	"net/http"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
)

// HostsReply is what GET /v1/hosts answers: the registered hosts of the
// cluster (on a local store, this one) with their boots, generations,
// slots and unfinished attempts.
type HostsReply struct {
	Hosts []supervisor.HostStatus `json:"hosts"`
}

func (s *Server) hosts(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	hosts, err := s.sup.Hosts(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, HostsReply{Hosts: hosts})
}

// Hosts lists the cluster's hosts.
func (c *Client) Hosts(ctx context.Context) ([]supervisor.HostStatus, error) {
	var r HostsReply
	if err := c.do(ctx, http.MethodGet, "/v1/hosts", nil, &r); err != nil {
		return nil, err
	}
	return r.Hosts, nil
}
