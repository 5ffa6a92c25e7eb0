package supervisor

import (
	"slices"
	"time"
)

// A drain is what an operator does before an upgrade or a host's
// maintenance (Nomad's node drain, kubectl drain): the supervisor takes
// no job any more (it stops dispatching, as at the start of a stop), lets
// the attempts it runs end on their own up to a deadline, and then is
// done: the daemon exits as on SIGTERM, and any attempt still running at
// the deadline is interrupted like a stop's, its job queued again
// whatever its retry policy (store.Job.Interrupted): for the next start,
// or at once for another host of a cluster, whose queue it shares.
// Submissions are still taken meanwhile and wait in the queue: a drain
// stops running jobs, not accepting them. A drain is not undone; a stop
// (SIGTERM) during it interrupts what runs at once.

// DrainStatus is where a drain stands.
type DrainStatus struct {
	Draining bool `json:"draining"`
	// Deadline: attempts still running then are interrupted and handed
	// back to the queue.
	Deadline time.Time `json:"deadline,omitzero"`
	// Running are the jobs whose attempts run on this supervisor now.
	Running []string `json:"running"`
	// Done: no attempt runs any more, or the deadline passed (Running
	// then lists those handed back); the daemon exits.
	Done bool `json:"done"`
}

// drainState is the supervisor's drain, under Supervisor.mu.
type drainState struct {
	on       bool
	deadline time.Time
	done     bool
	kick     chan struct{} // a shorter deadline was set
	finished chan struct{} // closed when done (Drained)
}

func newDrainState() drainState {
	return drainState{kick: make(chan struct{}, 1), finished: make(chan struct{})}
}

// Drain starts draining, or shortens the deadline of a drain under way
// when timeout ends it sooner (a later one changes nothing), and returns
// where it stands.
func (s *Supervisor) Drain(timeout time.Duration) DrainStatus {
	deadline := s.now().Add(max(timeout, 0))
	s.mu.Lock()
	d := &s.drain
	switch {
	case !d.on && timeout <= 0:
		// Hand back at once: done before the answer, which then names
		// what is handed back (the daemon stops right after it).
		d.on, d.deadline = true, deadline
		s.mu.Unlock()
		s.drainLoop()
		return s.DrainStatus()
	case !d.on:
		d.on, d.deadline = true, deadline
		go s.drainLoop()
	case !d.done && deadline.Before(d.deadline):
		d.deadline = deadline
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
	return s.DrainStatus()
}

// DrainStatus says where the drain stands (Draining false: none).
func (s *Supervisor) DrainStatus() DrainStatus {
	running := []string{}
	for _, a := range s.activeAttempts() {
		running = append(running, a.job.ID)
	}
	slices.Sort(running)
	s.mu.Lock()
	defer s.mu.Unlock()
	return DrainStatus{Draining: s.drain.on, Deadline: s.drain.deadline, Running: running, Done: s.drain.done}
}

// Drained is closed once a drain is done: the daemon then closes the
// supervisor (Close interrupts what still runs).
func (s *Supervisor) Drained() <-chan struct{} { return s.drain.finished }

func (s *Supervisor) drainLoop() {
	s.StopDispatching()
	idle := make(chan struct{})
	go func() { s.runs.Wait(); close(idle) }()
	st := s.DrainStatus()
	s.log.Info("draining: no job is dispatched any more", "running", len(st.Running), "deadline", st.Deadline)
	for {
		s.mu.Lock()
		deadline := s.drain.deadline
		s.mu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-idle:
			t.Stop()
			s.log.Info("drained: every attempt ended")
		case <-t.C:
			s.log.Info("drain deadline passed: the attempts still running are interrupted and queued again", "jobs", s.DrainStatus().Running)
		case <-s.drain.kick:
			t.Stop()
			continue
		case <-s.closed:
			t.Stop()
			return
		}
		s.mu.Lock()
		s.drain.done = true
		s.mu.Unlock()
		close(s.drain.finished)
		return
	}
}
