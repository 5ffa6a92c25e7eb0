package supervisor

import (
	"context"
	"errors"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
)

// driverPool drives invocations through their acts with the engine's
// embedded worker: each invocation in at most one goroutine at a time,
// at most InvocationWorkers at once. An invocation is driven when it is
// invoked, reconciled, rebound or its prog resumed (RunInvocation), and
// every live one once when the daemon starts. A Drive that stops on a
// refusal (an unknown attempt, an old epoch, a paused prog) waits for
// the next such event; nothing retries it in a loop.
type driverPool struct {
	mu      sync.Mutex
	cond    *sync.Cond
	s       *Supervisor
	queue   []string
	queued  map[string]bool
	running map[string]bool
	again   map[string]bool // kicked while running: once more after
	starts  uint64          // drives started, all invocations
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool
	stopped bool
}

func (p *driverPool) init() {
	if p.cond == nil {
		p.cond = sync.NewCond(&p.mu)
		p.queued, p.running, p.again = map[string]bool{}, map[string]bool{}, map[string]bool{}
	}
}

// start runs the workers and queues every live invocation.
func (p *driverPool) start(s *Supervisor) {
	p.mu.Lock()
	p.init()
	if p.started || p.stopped {
		p.mu.Unlock()
		return
	}
	p.started, p.s = true, s
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for range s.cfg.InvocationWorkers {
		p.wg.Add(1)
		go p.work()
	}
	p.mu.Unlock()
	invs, err := s.fence.Invocations(p.ctx)
	if err != nil {
		s.log.Warn("list invocations to drive", "err", err)
		return
	}
	for _, inv := range invs {
		if !inv.Status.Terminal() {
			p.kick(inv.ID)
		}
	}
}

// kick asks for the invocation to be driven.
func (p *driverPool) kick(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	switch {
	case p.stopped || !p.started:
	case p.running[id]:
		p.again[id] = true
	case !p.queued[id]:
		p.queued[id] = true
		p.queue = append(p.queue, id)
		p.cond.Signal()
	}
}

func (p *driverPool) work() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		for len(p.queue) == 0 && !p.stopped {
			p.cond.Wait()
		}
		if p.stopped {
			p.mu.Unlock()
			return
		}
		id := p.queue[0]
		p.queue = p.queue[1:]
		delete(p.queued, id)
		p.running[id] = true
		p.starts++
		p.mu.Unlock()

		p.drive(id)

		p.mu.Lock()
		delete(p.running, id)
		if p.again[id] && !p.stopped {
			delete(p.again, id)
			p.queued[id] = true
			p.queue = append(p.queue, id)
			p.cond.Signal()
		}
		p.mu.Unlock()
		// After running is cleared: a wait woken here finds the drive
		// over (activity), not still in flight.
		p.s.changes.notify(invocationKey(id))
	}
}

func (p *driverPool) drive(id string) {
	inv, err := p.s.fence.Drive(p.ctx, id)
	switch {
	case err == nil:
		p.s.log.Debug("invocation ended", "invocation", id, "status", inv.Status)
	case errors.Is(err, context.Canceled):
	case errors.Is(err, fencing.ErrUnknownOutcome):
		p.s.log.Info("invocation waits for reconciliation", "invocation", id, "err", err)
	default:
		if _, ok := fencing.AsRefusal(err); ok {
			p.s.log.Debug("invocation waits", "invocation", id, "err", err)
		} else {
			p.s.log.Warn("drive invocation", "invocation", id, "err", err)
		}
	}
}

// activity is how many drives have started and whether one of id is
// queued or running: a read of the invocation between two equal answers
// with busy false saw no drive of it in flight.
func (p *driverPool) activity(id string) (starts uint64, busy bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts, p.queued[id] || p.running[id]
}

// stop ends the workers after their current Drive (which an open slice
// or act finishes: acts are synchronous).
func (p *driverPool) stop() {
	p.mu.Lock()
	p.init()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	if p.cancel != nil {
		p.cancel()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}

// RunInvocation drives an invocation in the background (after invoke,
// reconcile, rebind or resume). Without a started daemon nothing runs.
func (s *Supervisor) RunInvocation(id string) { s.drivers.kick(id) }

// invocationKey is an invocation's key in the change notifier (which
// job ids share: the prefix keeps them apart).
func invocationKey(id string) string { return invocationPrefix + id }

// invocationPrefix sets the notifier's keys of invocations apart from
// job ids (which never hold a slash).
const invocationPrefix = "invocation/"

// WaitInvocation waits until the invocation has ended, waits for its
// owner (an unknown attempt and no drive of it in flight: Idle), or ctx
// ends.
func (s *Supervisor) WaitInvocation(ctx context.Context, id string) (*fencing.InvocationView, error) {
	for {
		ch := s.changes.watch(invocationKey(id))
		starts, busy := s.drivers.activity(id)
		v, err := s.fence.Invocation(ctx, id)
		if err != nil || v.Status.Terminal() {
			return v, err
		}
		if !busy && hasUnknownAttempt(v) {
			// Checked again after the read: a drive that started in
			// between may have recorded an attempt it is about to claim.
			if again, still := s.drivers.activity(id); again == starts && !still {
				v.Idle = true
				return v, nil
			}
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-ch:
		}
	}
}

func hasUnknownAttempt(v *fencing.InvocationView) bool {
	for _, op := range v.Operations {
		for _, a := range op.Attempts {
			if a.Unknown {
				return true
			}
		}
	}
	return false
}
