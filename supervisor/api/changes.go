package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// maxCursorBytes bounds ?after= of GET /v1/changes: a boot id, a dot and
// a number.
const maxCursorBytes = 128

// changes answers the jobs changed after ?after= (none: the cursor of
// now); with wait=1 it long-polls until there is one (at most the
// long-poll bound, then it answers none).
func (s *Server) changes(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "after", "wait")
	if err == nil {
		err = s.noBody(w, r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	after := q["after"]
	if len(after) > maxCursorBytes || !protocol.ValidText(after) && after != "" {
		s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "after %s: not a cursor of GET /v1/changes", protocol.QuotePrefix(after)))
		return
	}
	var wait bool
	switch q["wait"] {
	case "":
	case "1":
		wait = true
	default:
		s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "wait %s: want 1 or nothing", protocol.QuotePrefix(q["wait"])))
		return
	}
	ctx, cancel := s.pollContext(r.Context())
	defer cancel()
	ch, err := s.sup.JobChanges(ctx, after, wait)
	if err != nil && !pollEnded(err, ctx, r.Context()) {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, apitypes.JobChanges{Cursor: ch.Cursor, Jobs: ch.Jobs, Reset: ch.Reset})
}

// Changes answers the jobs changed after the cursor after ("": the
// cursor of now, no jobs); with wait it long-polls until there is a
// change (or the daemon's poll bound passes, with none).
func (c *Client) Changes(ctx context.Context, after string, wait bool) (*apitypes.JobChanges, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if wait {
		q.Set("wait", "1")
	}
	path := "/v1/changes"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var ch apitypes.JobChanges
	err := c.do(ctx, http.MethodGet, path, nil, &ch)
	return &ch, err
}
