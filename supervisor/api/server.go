// Package api is the supervisor's local HTTP/JSON API on a unix socket
// (mode 0600, peer credentials checked) and its client.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// SubmitBody is the body of POST /v1/jobs.
type SubmitBody struct {
	Spec     json.RawMessage    `json:"spec"`
	Priority int32              `json:"priority,omitempty"`
	Retry    *store.RetryPolicy `json:"retry,omitempty"`
}

// SubmitReply is its answer.
type SubmitReply struct {
	Job     *store.Job `json:"job"`
	Created bool       `json:"created"`
}

// ErrorBody is every error reply: the contract's error shape.
type ErrorBody struct {
	Error *protocol.Error `json:"error"`
}

// Server serves one supervisor.
type Server struct {
	sup  *supervisor.Supervisor
	log  *slog.Logger
	http *http.Server
	ln   net.Listener
}

// maxSubmitBytes bounds a submission: a maximal job spec and framing.
const maxSubmitBytes = protocol.MaxJobSpecBytes + 1<<16

// Listen opens the socket at path, accepting the current uid and root.
func Listen(sup *supervisor.Supervisor, path string, log *slog.Logger) (*Server, error) {
	ln, err := listen(path)
	if err != nil {
		return nil, err
	}
	owner := uint32(os.Getuid())
	pl := &peerListener{UnixListener: ln,
		allowed: func(uid uint32) bool { return uid == owner || uid == 0 },
		refused: func(uid uint32, pid int32) { log.Warn("api: refused a client of another uid", "uid", uid, "pid", pid) },
	}
	s := &Server{sup: sup, log: log, ln: pl}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", s.submit)
	mux.HandleFunc("GET /v1/jobs", s.list)
	mux.HandleFunc("GET /v1/jobs/{id}", s.status)
	mux.HandleFunc("POST /v1/jobs/{id}/cancel", s.cancel)
	mux.HandleFunc("GET /v1/jobs/{id}/result", s.result)
	mux.HandleFunc("GET /v1/jobs/{id}/events", s.events)
	mux.HandleFunc("GET /v1/jobs/{id}/wait", s.wait)
	mux.HandleFunc("GET /v1/capabilities", s.capabilities)
	mux.HandleFunc("GET /metrics", s.metrics)
	s.registerStore(mux)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return s, nil
}

// Serve blocks until Shutdown.
func (s *Server) Serve() error {
	err := s.http.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits for open requests (bounded by ctx).
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError maps errors to HTTP statuses; the body always carries the
// contract code, which is what clients act on.
func writeError(w http.ResponseWriter, err error) {
	var (
		status = http.StatusInternalServerError
		pe     = protocol.AsError(err)
	)
	switch {
	case errors.Is(err, supervisor.ErrBusy):
		status, pe = http.StatusServiceUnavailable, &protocol.Error{Code: CodeBusy, Message: err.Error(), Retryable: true}
	case errors.Is(err, supervisor.ErrUnknownJob):
		status, pe = http.StatusNotFound, &protocol.Error{Code: CodeUnknownJob, Message: err.Error()}
	default:
		switch pe.Code {
		case protocol.CodeInvalidJob:
			status = http.StatusBadRequest
		case protocol.CodeUnsupportedProfile, protocol.CodeUnsupportedLimit, protocol.CodeUnsupportedState, protocol.CodeUnsupportedSecret:
			status = http.StatusUnprocessableEntity
		}
	}
	writeJSON(w, status, ErrorBody{Error: pe})
}

// API-level codes beside the contract's.
const (
	CodeBusy       protocol.Code = "busy"
	CodeUnknownJob protocol.Code = "unknown_job"
	// CodeNotFinished: the job has no result yet (409; the CLI exits 4).
	CodeNotFinished protocol.Code = "not_finished"
)

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSubmitBytes))
	if err != nil {
		writeError(w, protocol.Errorf(protocol.CodeInvalidJob, "submission exceeds %d bytes", maxSubmitBytes))
		return
	}
	var body SubmitBody
	dec := json.NewDecoder(bytesReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || len(body.Spec) == 0 {
		writeError(w, protocol.Errorf(protocol.CodeInvalidJob, "submission must be {\"spec\": {...}, \"priority\"?, \"retry\"?}"))
		return
	}
	job, created, err := s.sup.Submit(r.Context(), supervisor.SubmitRequest{Spec: body.Spec, Priority: body.Priority, Retry: body.Retry})
	if err != nil {
		writeError(w, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, SubmitReply{Job: job, Created: created})
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	state := lifecycle.State(r.URL.Query().Get("state"))
	if state != "" && !state.Valid() {
		writeError(w, protocol.Errorf(protocol.CodeInvalidJob, "unknown state %q", state))
		return
	}
	jobs, err := s.sup.List(r.Context(), state)
	if err != nil {
		writeError(w, err)
		return
	}
	if jobs == nil {
		jobs = []*store.Job{}
	}
	writeJSON(w, http.StatusOK, jobs)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st, err := s.sup.Status(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	st, err := s.sup.Cancel(r.Context(), r.PathValue("id"), r.URL.Query().Get("reason"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// result answers with the accepted result (contract JSON), or the job's
// error once it ended without one, or 409 while it is still running.
func (s *Server) result(w http.ResponseWriter, r *http.Request) {
	st, err := s.sup.Status(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	j := st.Job
	switch {
	case j.State == lifecycle.Accepted:
		w.Header().Set("Content-Type", "application/json")
		w.Write(j.Result)
	case j.State.Terminal():
		e := j.Error
		if e == nil {
			e = protocol.Errorf(protocol.CodeInternalError, "job ended %s", j.State)
		}
		writeJSON(w, http.StatusOK, ErrorBody{Error: e})
	default:
		writeJSON(w, http.StatusConflict, ErrorBody{Error: &protocol.Error{Code: CodeNotFinished, Message: "job " + j.ID + " has not ended yet (" + string(j.State) + ")", Retryable: true}})
	}
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	ev, err := s.sup.Events(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ev)
}

// maxWait bounds one long poll; clients poll again.
const maxWait = 30 * time.Second

// wait long-polls until the job is in another state than ?seen= (or
// ends); an empty seen answers at once. With ?until=end it answers only
// when the job has ended (or at maxWait).
func (s *Server) wait(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), maxWait)
	defer cancel()
	q := r.URL.Query()
	var st *supervisor.JobStatus
	var err error
	switch until := q.Get("until"); until {
	case "":
		st, err = s.sup.Wait(ctx, r.PathValue("id"), q.Get("seen"))
	case "end":
		st, err = s.sup.WaitEnd(ctx, r.PathValue("id"))
	default:
		writeError(w, protocol.Errorf(protocol.CodeInvalidJob, "until=%q: want \"end\" or nothing", until))
		return
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// CapabilitiesReply is what GET /v1/capabilities answers: the contract
// capabilities jobs are admitted against, and what the host probe saw.
type CapabilitiesReply struct {
	Capabilities protocol.Capabilities  `json:"capabilities"`
	Host         *supervisor.HostReport `json:"host,omitempty"`
}

func (s *Server) capabilities(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, CapabilitiesReply{Capabilities: s.sup.Capabilities(), Host: s.sup.Host()})
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	if err := s.sup.WritePrometheus(r.Context(), w); err != nil {
		s.log.Warn("metrics", "err", err)
	}
}
