package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// The dashboard's reads (docs/dashboard-data.md): GET /v1/overview, the
// paged form of GET /v1/jobs and GET /v1/lookup/{prefix}.

// pageParams are the parameters of GET /v1/jobs that only its paged form
// takes: any of them, even empty (cursor= asks for the first page), asks
// for a JobPage rather than the older array of jobs.
var pageParams = []string{"op", "code", "program", "since", "until", "cursor"}

// wantsPage says whether a GET /v1/jobs asks for the paged form.
func wantsPage(r *http.Request) bool {
	q := r.URL.Query()
	for _, k := range pageParams {
		if q.Has(k) {
			return true
		}
	}
	return false
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	o, err := s.sup.Overview(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, OverviewOf(o, s.sup.Capabilities(), s.sup.Host()))
}

// listPage answers the paged form of GET /v1/jobs: a JobPage.
func (s *Server) listPage(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, append([]string{"state", "limit"}, pageParams...)...)
	if err == nil {
		err = s.noBody(w, r)
	}
	var jq supervisor.JobQuery
	if err == nil {
		jq, err = jobQueryOf(q)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.sup.ListJobs(r.Context(), jq)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, JobPageOf(page))
}

// jobQueryOf reads a list's query parameters.
func jobQueryOf(q map[string]string) (supervisor.JobQuery, error) {
	jq := supervisor.JobQuery{State: lifecycle.State(q["state"]), Operation: q["op"], Code: protocol.Code(q["code"]),
		Program: q["program"], Cursor: q["cursor"]}
	if jq.State != "" && !jq.State.Valid() {
		return jq, protocol.Errorf(protocol.CodeInvalidJob, "state %s: not a job state", protocol.QuotePrefix(string(jq.State)))
	}
	if jq.Operation != "" && !protocol.Operation(jq.Operation).Valid() {
		return jq, protocol.Errorf(protocol.CodeInvalidJob, "op %s: not an operation", protocol.QuotePrefix(jq.Operation))
	}
	if jq.Code != "" && !jq.Code.Known() {
		return jq, protocol.Errorf(protocol.CodeInvalidJob, "code %s: not an error code", protocol.QuotePrefix(string(jq.Code)))
	}
	if !validParticle(jq.Program) {
		return jq, protocol.Errorf(protocol.CodeInvalidJob, "program %s: want a particle, 64 lowercase hex digits", protocol.QuotePrefix(jq.Program))
	}
	for _, t := range []struct {
		name string
		to   *time.Time
	}{{"since", &jq.Since}, {"until", &jq.Until}} {
		v := q[t.name]
		if v == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return jq, protocol.Errorf(protocol.CodeInvalidJob, "%s %s: want an RFC 3339 time", t.name, protocol.QuotePrefix(v))
		}
		*t.to = at
	}
	if v := q["limit"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > supervisor.MaxPageLimit || strconv.Itoa(n) != v {
			return jq, protocol.Errorf(protocol.CodeInvalidJob, "limit %s: want 1..%d", protocol.QuotePrefix(v), supervisor.MaxPageLimit)
		}
		jq.Limit = n
	}
	return jq, nil
}

// validParticle: "" (no filter) or 64 lowercase hex digits.
func validParticle(p string) bool {
	if p == "" {
		return true
	}
	if len(p) != 64 {
		return false
	}
	for _, c := range p {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// lookup answers GET /v1/lookup/{prefix}: the one job whose id starts
// with prefix.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := s.sup.FindJob(r.Context(), r.PathValue("prefix"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, apitypes.JobLookup{JobID: id})
}
