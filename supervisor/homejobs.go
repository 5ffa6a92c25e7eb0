package supervisor

import (
	"context"
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// A home keeps its own store (<home>/store/supervisor.db) beside a shared
// one, for its neuron and host acts; it may also hold jobs of the time
// the home served on it alone. A daemon on the shared store neither sees
// nor collects those jobs: their status, results and certificates are
// reachable only when the home serves on its own store again. So a home
// whose own store holds jobs is not switched silently: Open refuses it
// (ErrLocalJobs) unless Config.KeepLocalJobs says that is meant. Either
// way nothing of them is deleted: the start's sweep of the sandboxes
// leaves alone every sandbox of a job its store does not know
// (recover.go).

// ErrLocalJobs: the home's own store holds jobs, and the supervisor was
// asked to serve on a shared store without Config.KeepLocalJobs.
var ErrLocalJobs = errors.New("the home's own store holds jobs")

// localJobs counts the jobs of the home's own store: all of them, and
// those not ended; first is the first one submitted.
func localJobs(ctx context.Context, local store.Store) (all, live int, first string, err error) {
	err = local.View(ctx, func(tx store.Tx) error {
		all, live, first = 0, 0, ""
		return tx.ForEachSubmitted(false, func(j *store.Job) bool {
			if all == 0 {
				first = j.ID
			}
			all++
			if !j.State.Terminal() {
				live++
			}
			return true
		})
	})
	return all, live, first, err
}

// guardLocalJobs refuses to serve on a shared store while the home's own
// store holds jobs, unless keep; with keep it logs what stays behind.
func guardLocalJobs(ctx context.Context, cfg Config, local store.Store) error {
	all, live, first, err := localJobs(ctx, local)
	if err != nil {
		return fmt.Errorf("read the jobs of the home's own store: %w", err)
	}
	if all == 0 {
		return nil
	}
	if cfg.KeepLocalJobs {
		cfg.Logger.Warn("the home's own store holds jobs this daemon does not serve: they stay there, untouched, with their certificates, until the home serves on its own store again",
			"home", cfg.Home, "jobs", all, "not_ended", live, "first", first)
		return nil
	}
	return fmt.Errorf("%w: %s holds %d job(s) (%d not ended; the first: %s), which a daemon on the shared store neither serves nor sees: "+
		"finish and collect them on the home's own store first (serve without --store, then gc), use another --home for the cluster, "+
		"or pass --keep-local-jobs to serve on the shared store anyway (the jobs and their certificates stay in the home's own store, untouched, until it serves on it again)",
		ErrLocalJobs, StorePath(cfg.Home), all, live, first)
}
