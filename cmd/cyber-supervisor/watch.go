package main

import (
	"context"
	"errors"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// Watching every job (list --watch, events --follow --all/--state):
// through a daemon, its log of changes (GET /v1/changes, a long poll)
// names the jobs that changed and only those are read again; on a home
// no daemon owns, nothing changes the store but a one-shot run, so the
// list is read again every readOnlyPoll, and each round asks for a
// daemon again (one that starts is then followed). Either way a job is
// reported when its mark (state, attempts, update time) differs from
// the one last seen. The watch ends with ctx (Ctrl-C): that is its way
// to end, not an error.

// readOnlyPoll is how often a watch of a home no daemon owns reads it.
const readOnlyPoll = time.Second

// jobMark is what makes a job's change worth a line.
type jobMark struct {
	state    string
	attempts uint32
	updated  time.Time
}

func markOf(j *apitypes.Job) jobMark {
	return jobMark{state: string(j.State), attempts: j.Attempts, updated: j.Updated}
}

// jobWatch follows every job of a home.
type jobWatch struct {
	a     *app
	known map[string]jobMark
	// cursor is where the daemon's log is followed from ("": read every
	// job, then follow from the cursor of then).
	cursor string
	// changed is called for each job whose mark changed (a new job
	// included), with the connection it was read through.
	changed func(ctx context.Context, dm *daemon, j *apitypes.Job) error
}

// start takes the state of every job as seen, without reporting it:
// through a daemon, the cursor of its log first, so that a change made
// while the jobs are read is reported (once: it differs from what was
// read) rather than missed.
func (w *jobWatch) start(ctx context.Context, dm *daemon) error {
	if !dm.readOnly {
		now, err := dm.Changes(ctx, "", false)
		if err != nil {
			return err
		}
		w.cursor = now.Cursor
	}
	jobs, err := dm.List(ctx, "")
	if err != nil {
		return err
	}
	w.seed(jobs)
	return nil
}

// seed takes jobs as seen, without reporting them.
func (w *jobWatch) seed(jobs []apitypes.Job) {
	if w.known == nil {
		w.known = map[string]jobMark{}
	}
	for i := range jobs {
		w.known[jobs[i].JobID] = markOf(&jobs[i])
	}
}

// see reports j if it changed since it was last seen.
func (w *jobWatch) see(ctx context.Context, dm *daemon, j *apitypes.Job) error {
	m := markOf(j)
	if old, ok := w.known[j.JobID]; ok && old == m {
		return nil
	}
	w.known[j.JobID] = m
	return w.changed(ctx, dm, j)
}

// rescan reads every job and reports those that changed.
func (w *jobWatch) rescan(ctx context.Context, dm *daemon) error {
	jobs, err := dm.List(ctx, "")
	if err != nil {
		return err
	}
	for i := range jobs {
		if err := w.see(ctx, dm, &jobs[i]); err != nil {
			return err
		}
	}
	return nil
}

// run watches until ctx ends; dm is the first connection (seed has
// taken what was shown before).
func (w *jobWatch) run(ctx context.Context, dm *daemon) error {
	dm.done() // the list was read: hold nothing while waiting
	err := w.loop(ctx, dm)
	if ctx.Err() != nil {
		return nil // Ctrl-C: the watch's end
	}
	return err
}

func (w *jobWatch) loop(ctx context.Context, dm *daemon) error {
	if w.known == nil {
		w.known = map[string]jobMark{}
	}
	cursor := w.cursor
	for {
		var err error
		switch {
		case dm.readOnly:
			// The store is not held between polls: a daemon may start.
			dm.done()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(readOnlyPoll):
			}
			if dm, err = w.a.dialReader(); err != nil {
				return err
			}
			err = w.rescan(ctx, dm)
		case cursor == "":
			// The cursor of now, then every job once: what changed
			// before the cursor the scan sees, what changes after it
			// the log names.
			var now *apitypes.JobChanges
			if now, err = dm.Changes(ctx, "", false); err == nil {
				cursor = now.Cursor
				err = w.rescan(ctx, dm)
			}
		default:
			var ch *apitypes.JobChanges
			if ch, err = dm.Changes(ctx, cursor, true); err == nil {
				cursor = ch.Cursor
				err = w.apply(ctx, dm, ch)
			}
		}
		if err != nil {
			if dm, err = w.retry(ctx, dm, err); err != nil {
				return err
			}
			cursor = ""
		}
	}
}

// apply reads again the jobs a change names (every job after a reset).
func (w *jobWatch) apply(ctx context.Context, dm *daemon, ch *apitypes.JobChanges) error {
	if ch.Reset {
		return w.rescan(ctx, dm)
	}
	for _, id := range ch.Jobs {
		st, err := dm.Status(ctx, id)
		var pe *protocol.Error
		if errors.As(err, &pe) && pe.Code == protocol.CodeUnknownJob {
			delete(w.known, id) // removed (gc) since
			continue
		}
		if err != nil {
			return err
		}
		if err := w.see(ctx, dm, &st.Job); err != nil {
			return err
		}
	}
	return nil
}

// retry follows an error: a daemon that stopped answering (a restart),
// or a store that another process holds (busy: a one-shot run, a daemon
// starting) is no end of the watch, which asks again a moment later
// (the next daemon, or the store read-only); any other error ends it.
func (w *jobWatch) retry(ctx context.Context, dm *daemon, err error) (*daemon, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	dm.done()
	var pe *protocol.Error
	busy := errors.As(err, &pe) && pe.Code == protocol.CodeBusy
	if !errors.Is(err, api.ErrUnavailable) && !busy {
		return nil, dm.err(err)
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(readOnlyPoll):
	}
	return w.a.dialReader()
}
