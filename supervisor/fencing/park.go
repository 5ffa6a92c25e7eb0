package fencing

import (
	"context"
	"fmt"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// The parking lot holds the live runs kept between slices, and bounds
// the memory they hold (docs/fencing.md, "Steps"): a run stopped at an
// act keeps its goroutine (its stack, at most DepthLimit levels) and the
// pairs it built and was given. At most MaxParked runs and ParkedCells
// of their pairs are parked; a run that does not fit keeps its place
// among MaxRuns instead, so the nox data the supervisor holds stays
// within MaxRuns × MaxCells + ParkedCells pairs whatever its progs do.
// A run a drive still goes on with is never evicted; one whose drive
// ended (it waits for an owner, a grant, a resume) is, oldest first, when
// another run needs its room. A run the lot lost is replayed when its
// invocation goes on: the first replay of an invocation in a boot is
// free, any other one is charged (startFresh).

type parking struct {
	mu    sync.Mutex
	runs  map[string]*liveRun // by invocation
	idle  map[*liveRun]uint64 // parked runs no drive holds, by when they became idle
	seq   uint64
	count int    // parked runs (those without a place among MaxRuns)
	cells uint64 // their pairs
	// maxRuns and maxCells bound count and cells (Config.MaxParked,
	// Config.ParkedCells).
	maxRuns  int
	maxCells uint64
	// replayed are the invocations this boot has replayed once.
	replayed map[string]bool
	closed   bool
}

// parked is the invocation's kept run, now held by its drive (nil: none).
func (e *Engine) parked(id string) *liveRun {
	p := &e.lot
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.runs[id]
	if r != nil {
		delete(p.idle, r)
	}
	return r
}

// firstReplay reports whether this is the invocation's first replay in
// this boot, and counts it.
func (e *Engine) firstReplay(id string) bool {
	p := &e.lot
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.replayed[id] {
		return false
	}
	p.replayed[id] = true
	return true
}

// acquireSlot takes a place among MaxRuns for r.
func (e *Engine) acquireSlot(ctx context.Context) error {
	select {
	case e.runs <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", reduce.ErrCancelled, ctx.Err())
	}
}

// park keeps a run its drive goes on with, after it ran to a stop: in
// the lot if it fits there (its place among MaxRuns is then given
// back), or with the place it holds.
func (e *Engine) park(r *liveRun, cells uint64) {
	p := &e.lot
	p.mu.Lock()
	p.uncount(r)
	r.cells = cells
	p.runs[r.inv] = r
	evicted, fits := p.makeRoom(r.cells)
	if fits {
		p.count++
		p.cells += r.cells
		r.counted = true
		if r.slot {
			r.slot = false
			<-e.runs
		}
	}
	p.mu.Unlock()
	for _, v := range evicted {
		e.closeRun(v)
	}
}

// uncount takes a run's pairs out of the lot's count. Under the lock.
func (p *parking) uncount(r *liveRun) {
	if r.counted {
		r.counted = false
		p.count--
		p.cells -= r.cells
	}
}

// makeRoom evicts idle runs, oldest first, until a run of cells pairs
// fits in the lot; fits says whether it does. Under the lock.
func (p *parking) makeRoom(cells uint64) (evicted []*liveRun, fits bool) {
	for {
		if p.count+1 <= p.maxRuns && p.cells+cells <= p.maxCells {
			return evicted, true
		}
		var oldest *liveRun
		for r, at := range p.idle {
			if oldest == nil || at < p.idle[oldest] {
				oldest = r
			}
		}
		if oldest == nil {
			return evicted, false
		}
		p.forget(oldest)
		evicted = append(evicted, oldest)
	}
}

// forget takes a run out of the lot. Under the lock.
func (p *parking) forget(r *liveRun) {
	if p.runs[r.inv] != r {
		return
	}
	delete(p.runs, r.inv)
	delete(p.idle, r)
	p.uncount(r)
}

// drop ends a run: out of the lot, its place given back, its goroutine
// ended. ended says the invocation has ended (its replay is forgotten).
func (e *Engine) drop(r *liveRun, ended bool) {
	p := &e.lot
	p.mu.Lock()
	p.forget(r)
	if ended {
		delete(p.replayed, r.inv)
	}
	p.mu.Unlock()
	e.closeRun(r)
}

// closeRun ends a run out of the lot.
func (e *Engine) closeRun(r *liveRun) {
	r.close()
	if r.slot {
		r.slot = false
		<-e.runs
	}
}

// driveEnded is called when a drive of the invocation returns: its kept
// run, if any, becomes idle (evictable); one that kept a place among
// MaxRuns parks now or is dropped, as a run that waits on its owner
// must not hold the VM. ended: the invocation has ended, and its run
// goes; after Close every run goes.
func (e *Engine) driveEnded(id string, ended bool) {
	p := &e.lot
	p.mu.Lock()
	if ended {
		delete(p.replayed, id)
	}
	r := p.runs[id]
	if r == nil {
		p.mu.Unlock()
		return
	}
	var evicted []*liveRun
	keep := !ended && !p.closed
	if keep && !r.counted {
		// It kept its place among MaxRuns: it parks now, or goes.
		evicted, keep = p.makeRoom(r.cells)
		if keep {
			p.count++
			p.cells += r.cells
			r.counted = true
		}
	}
	if keep && r.slot {
		r.slot = false
		<-e.runs
	}
	if keep {
		p.seq++
		p.idle[r] = p.seq
	} else {
		p.forget(r)
		evicted = append(evicted, r)
	}
	p.mu.Unlock()
	for _, v := range evicted {
		e.closeRun(v)
	}
}

// forgetInvocation drops the kept run of an invocation that ended out
// of a drive (a cancel).
func (e *Engine) forgetInvocation(id string) {
	p := &e.lot
	p.mu.Lock()
	r := p.runs[id]
	delete(p.replayed, id)
	if r != nil {
		p.forget(r)
	}
	p.mu.Unlock()
	if r != nil {
		e.closeRun(r)
	}
}

// Close ends the runs the engine keeps for invocations no drive holds;
// a drive running now drops its own when it returns, and nothing is
// kept after. The store is the caller's to close.
func (e *Engine) Close() {
	p := &e.lot
	p.mu.Lock()
	p.closed = true
	runs := make([]*liveRun, 0, len(p.idle))
	for r := range p.idle {
		runs = append(runs, r)
	}
	for _, r := range runs {
		p.forget(r)
	}
	p.mu.Unlock()
	for _, r := range runs {
		e.closeRun(r)
	}
}
