package api

import (
	"context"
	"net/http"
)

// The routes of prog revisions (docs/fencing.md, "Upgrades").

// progUpgrade makes the body's bundle the prog's next revision: 201 when
// it did, 200 when the same spec is the current revision already.
func (s *Server) progUpgrade(w http.ResponseWriter, r *http.Request) {
	id, err := recordID(r, "prog")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var body UpgradeBody
	s.bodyRoute(w, r, &body, func(ctx context.Context) (any, int, error) {
		rep, err := s.fence().UpgradeProg(ctx, id, body)
		if err != nil {
			return nil, 0, err
		}
		return rep, createdStatus(rep.Created), nil
	})
}

// progRevisions lists every revision of a prog, the first one first.
func (s *Server) progRevisions(ctx context.Context, id string) (any, error) {
	return s.fence().ProgRevisions(ctx, id)
}
