package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// ErrorBody is every error reply: the contract's error shape.
type ErrorBody struct {
	Error *protocol.Error `json:"error"`
}

// API-level codes beside the contract's (protocol.Codes). Every answer of
// the API carries one of the two sets.
const (
	CodeBusy        protocol.Code = "busy"         // 503: queue full, shutting down, or no room
	CodeUnknownJob  protocol.Code = "unknown_job"  // 404
	CodeNotFinished protocol.Code = "not_finished" // 409: no result yet (the CLI exits 4)
	CodeForbidden   protocol.Code = "forbidden"    // 403: a client of another uid
)

// Codes are the API's own codes (CodeStoreDamaged: see store.go).
var Codes = []protocol.Code{CodeBusy, CodeUnknownJob, CodeNotFinished, CodeForbidden, CodeStoreDamaged}

// KnownCode reports whether c is a code an answer of this API may carry.
func KnownCode(c protocol.Code) bool {
	for _, k := range Codes {
		if c == k {
			return true
		}
	}
	return c.Known()
}

// MaxErrorReplyBytes bounds an error answer's body: the message is at most
// protocol.MaxMessageBytes, and JSON escaping at most sextuples it.
const MaxErrorReplyBytes = protocol.MaxErrorBytes

// writeJSON answers v. The write deadline bounds a client that does not
// read its answer.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		s.log.Error("api: encode an answer", "err", err)
		status, buf = http.StatusInternalServerError, bytes.Buffer{}
		json.NewEncoder(&buf).Encode(ErrorBody{Error: protocol.Errorf(protocol.CodeInternalError, "encoding the answer failed")})
	}
	s.writeRaw(w, status, buf.Bytes())
}

func (s *Server) writeRaw(w http.ResponseWriter, status int, body []byte) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// writeError maps err onto the answer. The body always carries a code
// (the contract's or the API's), which is what clients act on, and a
// message of at most protocol.MaxMessageBytes, one printable line: caller
// input in it is a short quoted prefix already (see protocol.QuotePrefix),
// and this is the bound for everything else. Failures that are the
// daemon's (internal, I/O) are logged at ERROR with their full cause,
// which never crosses to the client unvetted.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeErrorStatus(w, r, 0, err)
}

// writeErrorStatus is writeError with the HTTP status given (0: the
// error's own).
func (s *Server) writeErrorStatus(w http.ResponseWriter, r *http.Request, status int, err error) {
	st, pe := classify(err)
	if status == 0 {
		status = st
	}
	reply := &protocol.Error{Code: pe.Code, Message: protocol.SafeMessage(pe.Message), Retryable: pe.Retryable}
	switch reply.Code {
	case protocol.CodeInternalError, protocol.CodeIOError:
		s.log.Error("api: request failed", "method", methodOf(r), "route", routeOf(r), "code", reply.Code, "err", err)
	default:
		s.log.Debug("api: request refused", "method", methodOf(r), "route", routeOf(r), "code", reply.Code, "err", reply.Message)
	}
	s.writeJSON(w, status, ErrorBody{Error: reply})
}

// classify picks the HTTP status and the error to answer.
func classify(err error) (int, *protocol.Error) {
	switch {
	case errors.Is(err, supervisor.ErrBusy), errors.Is(err, store.ErrFenced), errors.Is(err, store.ErrUnavailable):
		// A host of a cluster that lost its registration, or cannot reach
		// the shared store, stored nothing: another host may take it.
		return http.StatusServiceUnavailable, &protocol.Error{Code: CodeBusy, Message: err.Error(), Retryable: true}
	case errors.Is(err, supervisor.ErrUnknownJob):
		return http.StatusNotFound, &protocol.Error{Code: CodeUnknownJob, Message: err.Error()}
	}
	pe := protocol.AsError(err)
	switch pe.Code {
	case protocol.CodeInvalidJob:
		return http.StatusBadRequest, pe
	case protocol.CodeUnsupportedProfile, protocol.CodeUnsupportedLimit, protocol.CodeUnsupportedState, protocol.CodeUnsupportedSecret:
		return http.StatusUnprocessableEntity, pe
	case protocol.CodeIOError, CodeBusy:
		return http.StatusServiceUnavailable, pe
	case CodeUnknownJob:
		return http.StatusNotFound, pe
	case CodeNotFinished, protocol.CodeStaleState:
		return http.StatusConflict, pe
	case CodeStoreDamaged:
		return http.StatusInternalServerError, pe
	}
	return http.StatusInternalServerError, pe
}

// logger is the server's, or one that discards.
func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
