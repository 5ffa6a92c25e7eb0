package api

import (
	"context"
	"net/http"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
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
	if err := s.body(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	// Absent acts keep the current revision's (the engine's nil);
	// present ones are resolved, an empty list asking for none.
	var tags []uint64
	if body.Acts != nil {
		if tags, err = s.resolveActs(body.Acts); err != nil {
			s.writeError(w, r, err)
			return
		}
		if tags == nil {
			tags = []uint64{}
		}
	}
	spec, err := ProgSpecOf(body.Bundle, tags, body.StepLimit, body.MaxInFlight)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, created, err := s.engine().UpgradeProg(r.Context(), id, body.Revision, spec)
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	if created {
		// Stale invocations end at their next slice: let them.
		s.sup.RunAll()
	}
	s.writeJSON(w, createdStatus(created), ProgReply{Prog: p, Created: created})
}

// progRevisions lists every revision of a prog, the first one first.
func (s *Server) progRevisions(ctx context.Context, id string) (any, error) {
	ps, err := s.engine().ProgRevisions(ctx, id)
	if err == nil && ps == nil {
		ps = []*store.Prog{}
	}
	return ps, err
}
