package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// MaxDrainTimeout bounds a drain's deadline: a week, as the longest job
// time the daemon allows by default.
const MaxDrainTimeout = 168 * time.Hour

// drain starts the daemon's drain (supervisor.Drain): ?timeout=DURATION
// (Go syntax, 0 to hand the running attempts back at once; default 1h).
// Safe to repeat: a drain under way keeps the earlier of the deadlines.
func (s *Server) drain(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "timeout")
	if err == nil {
		err = s.noBody(w, r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	timeout := DefaultDrainTimeout
	if v := q["timeout"]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > MaxDrainTimeout {
			s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "timeout %s: want a duration from 0s to %s", protocol.QuotePrefix(v), MaxDrainTimeout))
			return
		}
		timeout = d
	}
	s.log.Info("api: drain requested", "timeout", timeout)
	s.writeJSON(w, http.StatusOK, DrainStatusOf(s.sup.Drain(timeout)))
}

// DefaultDrainTimeout is a drain's deadline when the request names none.
const DefaultDrainTimeout = time.Hour

// drainStatus answers where the drain stands; with ?running=N it
// long-polls (at most the long-poll bound) until the drain is done or
// the number of attempts running differs from N. The daemon's stop ends
// the poll at once with the drain done: its answer names the attempts
// handed back.
func (s *Server) drainStatus(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "running")
	if err == nil {
		err = s.noBody(w, r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st := s.sup.DrainStatus()
	if v := q["running"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || strconv.Itoa(n) != v {
			s.writeError(w, r, protocol.Errorf(protocol.CodeInvalidJob, "running %s: want a number of attempts", protocol.QuotePrefix(v)))
			return
		}
		ctx, cancel := s.pollContext(r.Context())
		defer cancel()
		t := time.NewTicker(drainPollTick)
		defer t.Stop()
		for !st.Done && len(st.Running) == n {
			select {
			case <-s.sup.Drained():
			case <-t.C:
			case <-ctx.Done():
			}
			st = s.sup.DrainStatus()
			if ctx.Err() != nil {
				break
			}
		}
	}
	s.writeJSON(w, http.StatusOK, DrainStatusOf(st))
}

// drainPollTick is how often a drain's long poll looks at the attempts.
const drainPollTick = 50 * time.Millisecond
