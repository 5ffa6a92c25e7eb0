package api

import (
	"context"
	"net/http"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

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
	s.writeJSON(w, http.StatusOK, apitypes.HostsReply{Hosts: HostsOf(hosts), Store: s.sup.StoreDriver()})
}

// Hosts lists the cluster's hosts: the registered hosts (on a local
// store, the daemon) with their boots, generations, slots and unfinished
// attempts.
func (c *Client) Hosts(ctx context.Context) ([]apitypes.Host, error) {
	var r apitypes.HostsReply
	if err := c.do(ctx, http.MethodGet, "/v1/hosts", nil, &r); err != nil {
		return nil, err
	}
	return r.Hosts, nil
}
