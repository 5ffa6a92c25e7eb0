package ui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// jobsView is the jobs page: one page of a filtered list, newest first,
// with the filters as the URL has them.
type jobsView struct {
	F       filters
	Page    *apitypes.JobPage
	Rows    []jobRow
	States  []lifecycle.State
	Ops     []string
	Codes   []protocol.Code
	NextURL string
	// Filtered: some filter is set (an empty page says so).
	Filtered bool
	// CLI is the list command that reads the same jobs.
	CLI string
}

type jobRow struct {
	apitypes.JobSummary
	Took string
}

// filters are the jobs page's query, kept as given so that the form
// shows them back.
type filters struct {
	State, Op, Code, Program, Since, Until, Cursor, Limit string
}

// defaultPageLimit is how many jobs a page shows unless limit says.
const defaultPageLimit = 50

func (h *handler) jobs(w http.ResponseWriter, r *http.Request) {
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, protocol.Errorf(protocol.CodeInvalidJob, "malformed query string"))
		return
	}
	for k, vs := range vals {
		if !strings.Contains(" state op code program since until cursor limit id ", " "+k+" ") {
			h.fail(w, r, http.StatusBadRequest, protocol.Errorf(protocol.CodeInvalidJob, "unknown filter %s", protocol.QuotePrefix(k)))
			return
		}
		if len(vs) > 1 {
			h.fail(w, r, http.StatusBadRequest, protocol.Errorf(protocol.CodeInvalidJob, "filter %s given %d times", k, len(vs)))
			return
		}
	}
	if id := strings.TrimSpace(vals.Get("id")); id != "" || vals.Has("id") {
		h.lookup(w, r, id)
		return
	}
	f := filters{State: vals.Get("state"), Op: vals.Get("op"), Code: vals.Get("code"), Program: vals.Get("program"),
		Since: vals.Get("since"), Until: vals.Get("until"), Cursor: vals.Get("cursor"), Limit: vals.Get("limit")}
	q, err := f.query(h.opts.Now())
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	page, err := h.src.ListJobs(r.Context(), q)
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	v := jobsView{F: f, Page: page, States: lifecycle.States, Ops: []string{"execute", "prove", "verify"}, Codes: protocol.ContractCodes(),
		Filtered: f.State != "" || f.Op != "" || f.Code != "" || f.Program != "" || f.Since != "" || f.Until != "", CLI: h.cli(listArgs(f))}
	for _, j := range page.Jobs {
		row := jobRow{JobSummary: j}
		if !j.Ended.IsZero() {
			row.Took = between(j.Submitted, j.Ended)
		}
		v.Rows = append(v.Rows, row)
	}
	if page.Next != "" {
		next := f
		next.Cursor = page.Next
		v.NextURL = next.url()
	}
	h.render(w, r, http.StatusOK, "jobs", "Jobs", v)
}

// lookup answers a job id or a unique prefix of one with the job's page.
func (h *handler) lookup(w http.ResponseWriter, r *http.Request, prefix string) {
	if prefix == "" {
		h.fail(w, r, http.StatusBadRequest, protocol.Errorf(protocol.CodeInvalidJob, "lookup: give a job id or a prefix of one"))
		return
	}
	id, err := h.src.FindJob(r.Context(), prefix)
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	http.Redirect(w, r, Prefix+"jobs/"+url.PathEscape(id), http.StatusSeeOther)
}

// query is the filters as the list's query; a filter that is not one is
// invalid_job with what was wrong.
func (f filters) query(now time.Time) (apitypes.JobQuery, error) {
	q := apitypes.JobQuery{State: lifecycle.State(f.State), Operation: f.Op, Code: protocol.Code(f.Code), Program: f.Program,
		Cursor: f.Cursor, Limit: defaultPageLimit}
	if q.State != "" && !q.State.Valid() {
		return q, protocol.Errorf(protocol.CodeInvalidJob, "state %s: not a job state", protocol.QuotePrefix(f.State))
	}
	if f.Op != "" && !protocol.Operation(f.Op).Valid() {
		return q, protocol.Errorf(protocol.CodeInvalidJob, "op %s: want execute, prove or verify", protocol.QuotePrefix(f.Op))
	}
	if f.Limit != "" {
		n, err := strconv.Atoi(f.Limit)
		if err != nil || n < 1 || n > 1000 {
			return q, protocol.Errorf(protocol.CodeInvalidJob, "limit %s: want 1..1000", protocol.QuotePrefix(f.Limit))
		}
		q.Limit = n
	}
	var err error
	if q.Since, err = parseWhen(f.Since, now); err != nil {
		return q, protocol.Errorf(protocol.CodeInvalidJob, "since %s: %s", protocol.QuotePrefix(f.Since), err.Error())
	}
	if q.Until, err = parseWhen(f.Until, now); err != nil {
		return q, protocol.Errorf(protocol.CodeInvalidJob, "until %s: %s", protocol.QuotePrefix(f.Until), err.Error())
	}
	return q, nil
}

// whenLayouts are the times a since or until may be written as, in UTC
// unless they say otherwise (the form's datetime-local gives the second).
var whenLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}

// parseWhen reads a time: one of whenLayouts, or a duration (Go syntax,
// 90m, 24h) meaning that long before now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	for _, l := range whenLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, protocol.Errorf(protocol.CodeInvalidJob, "want a time such as 2026-12-06 17:00 (UTC) or a duration before now such as 2h")
}

// url is the jobs page with these filters.
func (f filters) url() string {
	v := url.Values{}
	for _, kv := range [][2]string{{"state", f.State}, {"op", f.Op}, {"code", f.Code}, {"program", f.Program},
		{"since", f.Since}, {"until", f.Until}, {"limit", f.Limit}, {"cursor", f.Cursor}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	if len(v) == 0 {
		return Prefix + "jobs"
	}
	return Prefix + "jobs?" + v.Encode()
}

// listArgs are the CLI's list of the same state (the CLI filters by
// state only).
func listArgs(f filters) string {
	if f.State != "" {
		return "list --state " + shellQuote(f.State)
	}
	return "list"
}
