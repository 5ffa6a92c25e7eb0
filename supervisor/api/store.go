package api

import (
	"errors"
	"net/http"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// writeStoreError answers a store operation's error, a damaged store with
// its own code, store_damaged (the CLI exits 6 on it): the message names
// the file and the page or record.
func (s *Server) writeStoreError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, store.ErrCorrupt) {
		s.log.Error("api: the store is damaged", "route", routeOf(r), "err", err)
		s.writeJSON(w, protocol.CodeStoreDamaged.HTTPStatus(), ErrorBody{Error: protocol.Errorf(protocol.CodeStoreDamaged,
			"%s", protocol.SafeMessage(err.Error()))})
		return
	}
	s.writeError(w, r, err)
}

// StoreNoteHeader carries a backup's note: what the copy does not hold
// (supervisor.JobsOnEtcdNote).
const StoreNoteHeader = "Cyber-Store-Note"

// The store routes serve `cyber-supervisor store check` and `store backup`
// while a daemon owns the home (and the file's lock).

func (s *Server) registerStore(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/store/check", s.storeCheck)
	mux.HandleFunc("GET /v1/store/backup", s.storeBackup)
}

func (s *Server) storeCheck(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	rep, err := s.sup.CheckStore(r.Context())
	if err != nil {
		s.writeStoreError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, CheckReportOf(rep))
}

// storeBackup streams the copy. Its length is not known before the copy's
// transaction has begun, so the body is chunked; a copy cut short (the
// daemon stopped, a disk error) fails the client's own check of the file
// it wrote.
func (s *Server) storeBackup(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if note := s.sup.StoreNote(); note != "" {
		w.Header().Set(StoreNoteHeader, note)
	}
	if _, _, err := s.sup.BackupStore(r.Context(), w); err != nil {
		s.log.Error("store backup", "err", err)
		// The status is already sent if any byte was; breaking the
		// connection then makes the client see a truncated body.
		panic(http.ErrAbortHandler)
	}
}
