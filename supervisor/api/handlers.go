package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	// While the body comes in, the connection may make room for another.
	doneReading := s.conns.reading(r.Context())
	raw, release, err := s.readBody(w, r, protocol.MaxSubmissionBytes)
	doneReading()
	defer release()
	if err != nil {
		s.writeError(w, r, bodyError(err, protocol.MaxSubmissionBytes))
		return
	}
	sub, err := protocol.ParseSubmission(raw)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req := supervisor.SubmitRequest{Spec: sub.Spec, Priority: sub.Priority}
	if p := sub.Retry; p != nil {
		req.Retry = &store.RetryPolicy{MaxAttempts: p.MaxAttempts, Backoff: p.Backoff, MaxBackoff: p.MaxBackoff, Retryable: p.Retryable}
	}
	job, created, err := s.sup.Submit(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, createdStatus(created), apitypes.SubmitReply{Job: JobOf(job), Created: created})
}

// createdStatus answers a request that may repeat one already done: 201
// when it made the record, 200 when the record was there.
func createdStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

// A page of GET /v1/jobs holds at most this many jobs and, beyond its
// first job, this many bytes; NextPageHeader names where the next starts.
const (
	DefaultListLimit = 1000
	MaxListLimit     = 10000
	maxListBytes     = 8 << 20
	// NextPageHeader is set on a page that is not the last: the id to
	// pass as ?after= for the next.
	NextPageHeader = "Cyber-Next-After"
)

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	if wantsPage(r) {
		s.listPage(w, r)
		return
	}
	q, err := query(r, "state", "after", "limit", "last")
	if err == nil {
		err = s.noBody(w, r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	state := lifecycle.State(q["state"])
	if state != "" && !state.Valid() {
		s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "state %s: not a job state", protocol.QuotePrefix(string(state))))
		return
	}
	if v := q["last"]; v != "" {
		s.listLast(w, r, state, q)
		return
	}
	after := q["after"]
	if after != "" && !protocol.ValidName(after) {
		s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "after %s: not a job id", protocol.QuotePrefix(after)))
		return
	}
	limit := DefaultListLimit
	if v := q["limit"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxListLimit || strconv.Itoa(n) != v {
			s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "limit %s: want 1..%d", protocol.QuotePrefix(v), MaxListLimit))
			return
		}
		limit = n
	}
	var (
		page   = []byte{'['}
		count  int
		last   string
		more   bool
		encErr error
	)
	err = s.sup.Jobs(r.Context(), state, after, func(j *store.Job) bool {
		b, err := json.Marshal(JobOf(j))
		if err != nil {
			encErr = err
			return false
		}
		if count == limit || count > 0 && len(page)+len(b) > maxListBytes {
			more = true
			return false
		}
		if count > 0 {
			page = append(page, ',')
		}
		page = append(page, b...)
		count++
		last = j.ID
		return true
	})
	if err == nil {
		err = encErr
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if more {
		w.Header().Set(NextPageHeader, last)
	}
	s.writeRaw(w, http.StatusOK, append(page, ']', '\n'))
}

// listLast answers ?last=N: the N most recently submitted jobs (in state,
// unless it is ""), oldest first, in one page (N at most MaxListLimit).
func (s *Server) listLast(w http.ResponseWriter, r *http.Request, state lifecycle.State, q map[string]string) {
	v := q["last"]
	n, err := strconv.Atoi(v)
	switch {
	case q["after"] != "" || q["limit"] != "":
		err = protocol.Errorf(protocol.CodeInvalidJob, "last excludes after and limit")
	case err != nil || n < 1 || n > MaxListLimit || strconv.Itoa(n) != v:
		err = protocol.Errorf(protocol.CodeInvalidJob, "last %s: want 1..%d", protocol.QuotePrefix(v), MaxListLimit)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	jobs, err := s.sup.List(r.Context(), state, n)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page := make([]apitypes.Job, 0, len(jobs))
	for _, j := range jobs {
		page = append(page, JobOf(j))
	}
	s.writeJSON(w, http.StatusOK, page)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	id, err := s.bodilessJobRequest(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.sup.Status(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, JobStatusOf(st))
}

// bodilessJobRequest checks a request on /v1/jobs/{id}/... that takes
// neither a query (beyond known) nor a body, and returns its job id.
func (s *Server) bodilessJobRequest(w http.ResponseWriter, r *http.Request, known ...string) (string, error) {
	if _, err := query(r, known...); err != nil {
		return "", err
	}
	id, err := jobID(r)
	if err != nil {
		return "", err
	}
	return id, s.noBody(w, r)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	id, err := s.bodilessJobRequest(w, r, "reason")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, _ := query(r, "reason")
	reason := q["reason"]
	if reason != "" && !protocol.ValidText(reason) {
		s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "reason: want 1-%d printable ASCII characters", protocol.MaxTextBytes))
		return
	}
	st, err := s.sup.Cancel(r.Context(), id, reason)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, CancelReplyOf(st))
}

// resolve ends a job's unknown state as the operator says:
// ?attempt=N (its last, unknown attempt) and ?as=retry|cancel, with an
// optional ?reason=. Safe to repeat: the same resolution again answers
// resolved false.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	id, err := s.bodilessJobRequest(w, r, "attempt", "as", "reason")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, _ := query(r, "attempt", "as", "reason")
	n, perr := strconv.ParseUint(q["attempt"], 10, 32)
	switch {
	case perr != nil || n == 0 || strconv.FormatUint(n, 10) != q["attempt"]:
		err = protocol.Errorf(protocol.CodeInvalidJob, "attempt %s: want the number of the job's unknown attempt", protocol.QuotePrefix(q["attempt"]))
	case q["as"] != store.ResolveRetry && q["as"] != store.ResolveCancel:
		err = protocol.Errorf(protocol.CodeInvalidJob, "as %s: want %s or %s", protocol.QuotePrefix(q["as"]), store.ResolveRetry, store.ResolveCancel)
	case q["reason"] != "" && !protocol.ValidText(q["reason"]):
		err = protocol.Errorf(protocol.CodeInvalidJob, "reason: want 1-%d printable ASCII characters", protocol.MaxTextBytes)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.sup.Resolve(r.Context(), id, supervisor.ResolveRequest{Attempt: uint32(n), As: q["as"], Reason: q["reason"]})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, ResolveReplyOf(&st))
}

// result answers with the accepted result (contract JSON), or the job's
// error once it ended without one, or not_finished while it runs.
func (s *Server) result(w http.ResponseWriter, r *http.Request) {
	id, err := s.bodilessJobRequest(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.sup.Status(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	j := st.Job
	switch {
	case j.State == lifecycle.Accepted:
		s.writeRaw(w, http.StatusOK, j.Result)
	case j.State.Terminal():
		e := j.Error
		if e == nil {
			e = protocol.Errorf(protocol.CodeInternalError, "job ended %s", j.State)
		}
		s.writeJSON(w, http.StatusOK, apitypes.ErrorReply{Error: e})
	default:
		s.writeError(w, r, protocol.Errorf(protocol.CodeNotFinished, "job %s has not ended yet (%s)", j.ID, j.State))
	}
}

// events answers the job's events; with ?after=SEQ only later ones, and
// with wait=1 it long-polls (at most the long-poll bound) until there are
// some or the job has ended (events --follow).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id, err := s.bodilessJobRequest(w, r, "after", "wait")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, _ := query(r, "after", "wait")
	var after uint64
	if v := q["after"]; v != "" {
		if after, err = protocol.ParseU64(v); err != nil {
			s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "after %s: want an event seq", protocol.QuotePrefix(v)))
			return
		}
	}
	var ev []store.Event
	switch q["wait"] {
	case "":
		ev, err = s.sup.EventsAfter(r.Context(), id, after)
	case "1":
		ctx, cancel := s.pollContext(r.Context())
		defer cancel()
		ev, _, err = s.sup.WaitEvents(ctx, id, after)
		if pollEnded(err, ctx, r.Context()) {
			// The poll's bound passed, or the daemon stops: nothing new yet.
			ev, err = nil, nil
		}
	default:
		s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "wait %s: want 1 or nothing", protocol.QuotePrefix(q["wait"])))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, EventsOf(ev))
}

// wait long-polls until the job is in another state than ?seen= (or
// ends); an empty seen answers at once. With ?until=end it answers only
// when the job has ended. Either way at most the long-poll bound passes.
func (s *Server) wait(w http.ResponseWriter, r *http.Request) {
	id, err := s.bodilessJobRequest(w, r, "seen", "until")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, _ := query(r, "seen", "until")
	seen, until := q["seen"], q["until"]
	if seen != "" && !lifecycle.State(seen).Valid() {
		s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "seen %s: not a job state", protocol.QuotePrefix(seen)))
		return
	}
	ctx, cancel := s.pollContext(r.Context())
	defer cancel()
	var st *supervisor.JobStatus
	switch until {
	case "":
		st, err = s.sup.Wait(ctx, id, seen)
	case "end":
		if seen != "" {
			s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "until=end and seen exclude each other"))
			return
		}
		st, err = s.sup.WaitEnd(ctx, id)
	default:
		s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "until %s: want \"end\" or nothing", protocol.QuotePrefix(until)))
		return
	}
	if pollEnded(err, ctx, r.Context()) {
		// The poll's bound passed, or the daemon stops (perhaps before
		// the job could even be read): the answer is the job as it is now.
		st, err = s.sup.Status(r.Context(), id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, JobStatusOf(st))
}

func (s *Server) capabilities(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	reply, err := CapabilitiesReplyOf(s.sup.Capabilities(), s.sup.Limits(), s.sup.Host())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, reply)
}

// gc is retention once: ?older_than=DURATION (Go syntax, default 0) and
// ?state=S (default: every ended state but unknown). It answers the
// GCReport.
func (s *Server) gc(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "older_than", "state")
	if err == nil {
		err = s.noBody(w, r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req supervisor.GCRequest
	if v := q["older_than"]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "older_than %s: want a duration such as 24h", protocol.QuotePrefix(v)))
			return
		}
		req.OlderThan = d
	}
	req.State = lifecycle.State(q["state"])
	if req.State != "" && (!req.State.Terminal() || req.State == lifecycle.Unknown) {
		s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "state %s: want accepted, rejected, failed or cancelled", protocol.QuotePrefix(string(req.State))))
		return
	}
	rep, err := s.sup.GC(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, GCReportOf(rep))
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	var buf bytes.Buffer
	if err := s.sup.WritePrometheus(r.Context(), &buf); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writePrometheus(&buf)
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	w.Write(buf.Bytes())
}

// writePrometheus adds the API's own series.
func (s *Server) writePrometheus(w io.Writer) {
	fmt.Fprintf(w, "# HELP cyber_supervisor_api_connections API connections held now (at most the cap).\n# TYPE cyber_supervisor_api_connections gauge\ncyber_supervisor_api_connections %d\n", s.conns.open())
	fmt.Fprintf(w, "# HELP cyber_supervisor_api_connections_max The cap on API connections.\n# TYPE cyber_supervisor_api_connections_max gauge\ncyber_supervisor_api_connections_max %d\n", s.cfg.MaxConns)
	fmt.Fprintf(w, "# HELP cyber_supervisor_api_connections_evicted_total Connections closed at the cap to make room (they had no request in progress).\n# TYPE cyber_supervisor_api_connections_evicted_total counter\ncyber_supervisor_api_connections_evicted_total %d\n", s.stats.Evicted.Load())
	fmt.Fprintf(w, "# HELP cyber_supervisor_api_connections_refused_total Connections answered busy at the cap (every held one was being answered).\n# TYPE cyber_supervisor_api_connections_refused_total counter\ncyber_supervisor_api_connections_refused_total %d\n", s.stats.Refused.Load())
}

// bodiless checks a request that takes neither query nor body.
func (s *Server) bodiless(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	return s.noBody(w, r)
}
