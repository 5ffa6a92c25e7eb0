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
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// ErrorBody is every error reply: the contract's error shape
// (apitypes.ErrorReply).
type ErrorBody = apitypes.ErrorReply

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

// writeError maps err onto the answer: its code, and the code's status
// from protocol's error table (docs/errors.md). The body always carries a
// code (the contract's or the API's), which is what clients act on, and a
// message of at most protocol.MaxMessageBytes, one printable line: caller
// input in it is a short quoted prefix already (see protocol.QuotePrefix),
// and this is the bound for everything else. Failures that are the
// daemon's (internal, I/O) are logged at ERROR with their full cause,
// which never crosses to the client unvetted.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeErrorStatus(w, r, 0, err)
}

// writeErrorStatus is writeError with the HTTP status given (0: the
// code's), for a route that knows a more precise one (a path no route
// has, a fencing refusal of a missing record).
func (s *Server) writeErrorStatus(w http.ResponseWriter, r *http.Request, status int, err error) {
	pe := answerOf(err)
	if status == 0 {
		status = pe.Code.HTTPStatus()
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

// answerOf is the error an answer carries: the supervisor's conditions
// that are the API's own codes, else err mapped onto the contract's
// (protocol.AsError).
func answerOf(err error) *protocol.Error {
	switch {
	case errors.Is(err, supervisor.ErrBusy), errors.Is(err, store.ErrFenced), errors.Is(err, store.ErrUnavailable):
		// A host of a cluster that lost its registration, or cannot reach
		// the shared store, stored nothing: another host may take it.
		return protocol.Errorf(protocol.CodeBusy, "%s", err)
	case errors.Is(err, supervisor.ErrUnknownJob):
		return protocol.Errorf(protocol.CodeUnknownJob, "%s", err)
	case errors.Is(err, supervisor.ErrInvalidCursor):
		return protocol.Errorf(protocol.CodeInvalidCursor, "%s", err)
	case errors.Is(err, supervisor.ErrAmbiguousJob):
		return protocol.Errorf(protocol.CodeAmbiguousJob, "%s", err)
	}
	return protocol.AsError(err)
}

// logger is the server's, or one that discards.
func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
