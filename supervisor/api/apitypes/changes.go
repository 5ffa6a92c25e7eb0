package apitypes

// JobChanges answers GET /v1/changes: the jobs that changed after a
// cursor, for a watcher of every job (list --watch, events --follow
// over several jobs, the dashboard's live updates).
type JobChanges struct {
	// Cursor names this point: pass it as ?after= next time. It is the
	// daemon boot's: one of another boot is a reset.
	Cursor string `json:"cursor"`
	// Jobs changed after the cursor given (submitted, moved to another
	// state, cancelled, resolved), each once, in the order of their last
	// change.
	Jobs []string `json:"jobs"`
	// Reset: the cursor given was of another boot or too old for the
	// daemon's log of changes (it keeps the last 4096): read every job
	// again, then go on from Cursor.
	Reset bool `json:"reset,omitempty"`
}
