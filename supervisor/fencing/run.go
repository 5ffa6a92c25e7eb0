package fencing

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The VM runs inside the supervisor, so what a run may hold is bounded
// here, not by a cgroup: at most MaxRuns runs at once, each with at most
// MaxCells pairs (those it builds and those of the witnesses it is
// given back) and DepthLimit levels of recursion. That bounds all the
// nox data the supervisor holds, whatever its progs do.

// runResult is what one run of a slice reached.
type runResult struct {
	err     error // errSuspend, errOutOfSteps, errDiverged, errArgument, a provider or cancel error, or nil
	outcome reduce.Outcome
	steps   uint64
	suspend *suspension
	served  int
	failed  int
	diverge string
}

// runStats count what the VM did, for tests and benchmarks.
type runStats struct {
	slices  atomic.Uint64 // runs started
	running atomic.Int64  // runs in the VM now
	peak    atomic.Int64  // the most at once
	// steps is every reduce step the VM executed, replays included:
	// the supervisor CPU that programs cost (docs/fencing.md, "Steps").
	steps atomic.Uint64
}

func (s *runStats) enter() {
	s.slices.Add(1)
	n := s.running.Add(1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// run runs the slice's program once from the start with replay, when
// one of the MaxRuns places is free.
func (e *Engine) run(ctx context.Context, plan *slicePlan) runResult {
	select {
	case e.runs <- struct{}{}:
	case <-ctx.Done():
		return runResult{err: fmt.Errorf("%w: %w", reduce.ErrCancelled, ctx.Err()), failed: -1}
	}
	e.stats.enter()
	defer func() {
		e.stats.running.Add(-1)
		<-e.runs
	}()
	if plan.logPairs > e.cfg.MaxCells {
		return runResult{err: fmt.Errorf("%w: the witnesses hold %d pairs", reduce.ErrCellLimit, plan.logPairs), failed: -1}
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
			return runResult{err: fmt.Errorf("decode the outcome of %s: %w", ent.op.ID, err), failed: -1}
		}
		ent.value = v
	}
	allowed := plan.inv.Charged + plan.reserved
	p := &replay{log: plan.log, allowed: allowed, failed: -1}
	m := reduce.New(reduce.Config{Provider: p, DepthLimit: DepthLimit, MaxCells: e.cfg.MaxCells - plan.logPairs, MaxSteps: allowed})
	p.m = m
	subject := noun.Subject(plan.inv.Inputs)
	out, err := m.Reduce(ctx, subject, plan.program, plan.inv.Limit)
	e.stats.steps.Add(m.Stats().Steps)
	res := runResult{err: err, outcome: out, steps: m.Stats().Steps, suspend: p.suspend, served: p.served, failed: p.failed, diverge: p.diverged}
	if errors.Is(err, reduce.ErrStepLimit) || (err == nil && res.steps > allowed) {
		res.err = errOutOfSteps
	}
	return res
}

// tokenPairs is the number of pairs of a noun's canonical tokens (a pair
// is one byte, an atom nine, and a tree has one atom more than pairs).
func tokenPairs(b []byte) uint64 {
	if len(b) < 9 {
		return 0
	}
	return uint64(len(b)-9) / 10
}
