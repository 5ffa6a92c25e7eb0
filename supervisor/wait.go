package supervisor

import (
	"context"
	"sync"
)

// notifier wakes waiters when a job changes state.
type notifier struct {
	mu      sync.Mutex
	waiters map[string][]chan struct{}
}

func (n *notifier) watch(job string) chan struct{} {
	ch := make(chan struct{})
	n.mu.Lock()
	if n.waiters == nil {
		n.waiters = map[string][]chan struct{}{}
	}
	n.waiters[job] = append(n.waiters[job], ch)
	n.mu.Unlock()
	return ch
}

// unwatch drops a watch that will not be waited on, so that waits on ids
// that never change (an unknown id, a poll that timed out) leave nothing.
func (n *notifier) unwatch(job string, ch chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	chs := n.waiters[job]
	for i, c := range chs {
		if c == ch {
			chs = append(chs[:i], chs[i+1:]...)
			break
		}
	}
	if len(chs) == 0 {
		delete(n.waiters, job)
	} else {
		n.waiters[job] = chs
	}
}

func (n *notifier) notify(job string) {
	n.mu.Lock()
	chs := n.waiters[job]
	delete(n.waiters, job)
	n.mu.Unlock()
	for _, ch := range chs {
		close(ch)
	}
}

// Wait blocks until the job is in another state than seen (so an empty
// seen returns at once) or has ended, or ctx ends, and returns its status
// then. Waiters call it in a loop with the last state they saw.
func (s *Supervisor) Wait(ctx context.Context, id string, seen string) (*JobStatus, error) {
	return s.waitUntil(ctx, id, func(st *JobStatus) bool { return string(st.Job.State) != seen })
}

// WaitEnd blocks until the job has ended (a terminal state, unknown
// included) or ctx ends, and returns its status then. Clients that only
// want the outcome use it instead of following every state in Wait: one
// answer per job instead of one per state.
func (s *Supervisor) WaitEnd(ctx context.Context, id string) (*JobStatus, error) {
	return s.waitUntil(ctx, id, func(*JobStatus) bool { return false })
}

// waitUntil re-reads the job's status at each of its changes until it has
// ended or done says so, or ctx ends.
func (s *Supervisor) waitUntil(ctx context.Context, id string, done func(*JobStatus) bool) (*JobStatus, error) {
	for {
		ch := s.changes.watch(id)
		st, err := s.Status(ctx, id)
		if err != nil {
			s.changes.unwatch(id, ch)
			return nil, err
		}
		if st.Job.State.Terminal() || done(st) {
			s.changes.unwatch(id, ch)
			return st, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			s.changes.unwatch(id, ch)
			return st, ctx.Err()
		}
	}
}
