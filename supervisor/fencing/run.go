package fencing

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The VM runs inside the supervisor, so what a run may hold is bounded
// here, not by a cgroup: at most MaxRuns runs at once, each with at most
// MaxCells pairs (those it holds, counted by the machine's census from
// its own roots, so that concurrent runs are counted apart; and those
// of the witnesses it is given back, counted whole up front, and again
// by the census when it holds them) and DepthLimit levels of recursion.
// That bounds all the nox data the supervisor holds, whatever its
// progs do.

// runResult is what one slice of a run reached.
type runResult struct {
	err     error // errSuspend, errOutOfSteps, errDiverged, errArgument, a provider or cancel error, or nil
	outcome reduce.Outcome
	steps   uint64 // the run's steps, as charged
	suspend *suspension
	served  int
	failed  int
	diverge string
	// live is the run the slice went on with (nil: it did not run).
	live *liveRun
}

// runStats count what the VM did, for tests and benchmarks.
type runStats struct {
	slices  atomic.Uint64 // slices of runs (run calls)
	running atomic.Int64  // runs in the VM now
	peak    atomic.Int64  // the most at once
	// steps is every reduce step the VM executed, replays included:
	// the supervisor CPU that programs cost (docs/fencing.md, "Steps").
	steps atomic.Uint64
	// fresh counts runs started from the beginning of their program,
	// replays among them; goroutines the live runs' goroutines now.
	fresh      atomic.Uint64
	replays    atomic.Uint64
	goroutines atomic.Int64
}

func (s *runStats) enter() {
	n := s.running.Add(1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// run runs a slice of the invocation's program: it goes on with the
// run this engine keeps for it (live.go) when that run is where the
// invocation is, and otherwise starts the program afresh, replaying the
// outcome log. The run executes when one of the MaxRuns places is free.
func (e *Engine) run(ctx context.Context, plan *slicePlan) runResult {
	e.stats.slices.Add(1)
	r := e.parked(plan.inv.ID)
	if r != nil && !r.continues(plan) {
		e.drop(r, false)
		r = nil
	}
	if r != nil && !r.reached {
		// The run is at a stop no slice recorded: report it again.
		return r.result(plan)
	}
	if r == nil || !r.slot {
		if err := e.acquireSlot(ctx); err != nil {
			return runResult{err: err, failed: -1}
		}
		if r != nil {
			r.slot = true
		}
	}
	msg := resumeMsg{}
	if r == nil {
		var failed *runResult
		if r, failed = e.startFresh(plan); failed != nil {
			<-e.runs
			return *failed
		}
		r.slot = true
	} else if r.stop.kind == stopAct {
		msg.entry = &plan.log[len(plan.log)-1]
	}
	msg.allowed = r.machine(plan.inv.Charged + plan.reserved)
	e.stats.enter()
	r.stop = r.exec(ctx, msg)
	e.stats.running.Add(-1)
	e.stats.steps.Add(r.stop.steps - r.ran)
	r.ran = r.stop.steps
	r.at, r.logLen, r.reached = plan.inv.Charged, len(plan.log), false
	e.park(r, r.m.Stats().HeldBound+(e.cfg.MaxCells-r.maxCells))
	return r.result(plan)
}

// startFresh starts the plan's program from its beginning, its
// witnesses decoded under the cell bound. A start that replays steps
// the invocation was charged already (a restart, or its kept run was
// dropped) is free the first time in a boot; any later one is charged
// as new steps, so that replays never cost the supervisor more than the
// invocation's limit a boot beyond its one free replay.
func (e *Engine) startFresh(plan *slicePlan) (*liveRun, *runResult) {
	if plan.logPairs > e.cfg.MaxCells {
		return nil, &runResult{err: fmt.Errorf("%w: the witnesses hold %d pairs", reduce.ErrCellLimit, plan.logPairs), failed: -1}
	}
	// The witnesses are decoded here, under the bound, not while planning.
	for i := range plan.log {
		ent := &plan.log[i]
		if ent.outcome.Kind != store.OutcomeValue {
			continue
		}
		v, err := store.DecodeNoun(ent.outcome.Value)
		if err != nil {
			// plan checked the tokens: not reached unless memory is bad.
			return nil, &runResult{err: fmt.Errorf("decode the outcome of %s: %w", ent.op.ID, err), failed: -1}
		}
		ent.value = v
	}
	var offset uint64
	if plan.inv.Charged > 0 {
		e.stats.replays.Add(1)
		if !e.firstReplay(plan.inv.ID) {
			offset = plan.inv.Charged
		}
	}
	e.stats.fresh.Add(1)
	return e.startRun(plan, offset), nil
}

// settled updates the run a slice went on with once its settle
// committed: where the invocation is now, and whether the stop was
// recorded. A run that cannot go on is dropped.
func (e *Engine) settled(plan *slicePlan, run runResult) {
	r := run.live
	switch {
	case r == nil:
	case !plan.goesOn || errors.Is(run.err, reduce.ErrCancelled):
		e.drop(r, !plan.goesOn)
	case errors.Is(run.err, errSuspend):
		r.at, r.reached = run.steps, true
	case errors.Is(run.err, errOutOfSteps):
		// Charged its reservation in full; a stop past it is still ahead.
		r.at, r.reached = plan.inv.Charged+plan.reserved, r.stop.kind == stopSteps
	default:
		e.drop(r, true)
	}
}

// tokenPairs is the number of pairs of a noun's canonical tokens (a pair
// is one byte, an atom nine, and a tree has one atom more than pairs).
func tokenPairs(b []byte) uint64 {
	if len(b) < 9 {
		return 0
	}
	return uint64(len(b)-9) / 10
}
