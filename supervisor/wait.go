package supervisor

import (
	"context"
	"strings"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// notifier wakes waiters when a job changes. A waiter for the job's end
// only (WaitEnd) sleeps through the changes known to leave the job in a
// state that is not terminal (notifyState): each wake is a read of the
// job's status, and on a shared store a request to etcd.
type notifier struct {
	mu      sync.Mutex
	waiters map[string][]waiter
	// log numbers the jobs' changes for the watchers of every job
	// (changes.go).
	log changeLog
}

type waiter struct {
	ch      chan struct{}
	endOnly bool
}

func (n *notifier) watch(job string) chan struct{} { return n.add(job, false) }

// watchEnd is woken by every change except those notifyState names as
// leaving the job in a state that is not terminal.
func (n *notifier) watchEnd(job string) chan struct{} { return n.add(job, true) }

func (n *notifier) add(job string, endOnly bool) chan struct{} {
	ch := make(chan struct{})
	n.mu.Lock()
	if n.waiters == nil {
		n.waiters = map[string][]waiter{}
	}
	n.waiters[job] = append(n.waiters[job], waiter{ch: ch, endOnly: endOnly})
	n.mu.Unlock()
	return ch
}

// unwatch drops a watch that will not be waited on, so that waits on ids
// that never change (an unknown id, a poll that timed out) leave nothing.
func (n *notifier) unwatch(job string, ch chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ws := n.waiters[job]
	for i, w := range ws {
		if w.ch == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(n.waiters, job)
	} else {
		n.waiters[job] = ws
	}
}

// notifyAll wakes every waiter (the cluster's watch had a gap).
func (n *notifier) notifyAll() {
	n.log.gap()
	n.mu.Lock()
	all := n.waiters
	n.waiters = nil
	n.mu.Unlock()
	for _, ws := range all {
		for _, w := range ws {
			close(w.ch)
		}
	}
}

// notify wakes every waiter of the job: it changed, in a way the caller
// does not name.
func (n *notifier) notify(job string) { n.notifyState(job, "") }

// notifyState wakes the job's waiters after a change that left the job
// in state (as committed, or as its kept steps show it): end-only
// waiters sleep on unless state is terminal or not named ("").
func (n *notifier) notifyState(job string, state lifecycle.State) {
	if !strings.HasPrefix(job, invocationPrefix) {
		n.log.add(job)
	}
	wakeAll := state == "" || state.Terminal()
	n.mu.Lock()
	ws := n.waiters[job]
	var kept []waiter
	if !wakeAll {
		for _, w := range ws {
			if w.endOnly {
				kept = append(kept, w)
			}
		}
	}
	if len(kept) > 0 {
		n.waiters[job] = kept
	} else {
		delete(n.waiters, job)
	}
	n.mu.Unlock()
	for _, w := range ws {
		if wakeAll || !w.endOnly {
			close(w.ch)
		}
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
	return s.waitUntil(ctx, id, nil)
}

// waitUntil re-reads the job's status at each of its changes until it has
// ended or done says so, or ctx ends. A nil done waits for the end only,
// and is not woken by the job's steps between.
func (s *Supervisor) waitUntil(ctx context.Context, id string, done func(*JobStatus) bool) (*JobStatus, error) {
	for {
		var ch chan struct{}
		if done == nil {
			ch = s.changes.watchEnd(id)
		} else {
			ch = s.changes.watch(id)
		}
		st, err := s.Status(ctx, id)
		if err != nil {
			s.changes.unwatch(id, ch)
			return nil, err
		}
		if st.Job.State.Terminal() || done != nil && done(st) {
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
