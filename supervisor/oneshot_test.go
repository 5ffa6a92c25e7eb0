package supervisor

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// countingStore counts committed write transactions.
type countingStore struct {
	store.Store
	updates atomic.Int32
}

func (c *countingStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	err := c.Store.Update(ctx, fn)
	if err == nil { // a commit; a rolled-back transaction writes nothing
		c.updates.Add(1)
	}
	return err
}

// A one-shot supervisor records an accepted job in two commits (the job
// with its prepared attempt, then its end with every step between), a
// daemon in four (submit, prepare, running, the end with produced and
// verified); both leave the same events in the same order.
func TestOneShotCommits(t *testing.T) {
	requireIsolation(t)
	reasons := map[bool][]string{}
	for _, oneShot := range []bool{false, true} {
		var cs *countingStore
		s := openWith(t, t.TempDir(), launch.IsolationRequired, func(c *Config) { c.OneShot = oneShot }, func(s *Supervisor) {
			cs = &countingStore{Store: s.store}
			s.store = cs
		})
		id := s.submit(t, spec(t, "j", protocol.OpProve, add2, []uint64{3, 5}, protocol.Limits{}, nil))
		st := s.wait(t, id)
		if st.Job.State != lifecycle.Accepted {
			t.Fatalf("one-shot %v: %s %+v", oneShot, st.Job.State, st.Job.Error)
		}
		s.close(t)
		want := int32(4)
		if oneShot {
			want = 2
		}
		if n := cs.updates.Load(); n != want {
			t.Errorf("one-shot %v: %d commits, want %d", oneShot, n, want)
		}
		ev, _ := s.eventsAfterClose(t, id)
		for i, e := range ev {
			reasons[oneShot] = append(reasons[oneShot], string(e.To)+" "+e.Reason)
			if i > 0 && e.Time.Before(ev[i-1].Time) {
				t.Errorf("one-shot %v: event %d at %s before %s", oneShot, i, e.Time, ev[i-1].Time)
			}
		}
	}
	if a, b := reasons[false], reasons[true]; len(a) != len(b) || len(a) != 6 {
		t.Fatalf("events: daemon %q, one-shot %q", a, b)
	} else {
		for i := range a {
			if a[i] != b[i] {
				t.Errorf("event %d: daemon %q, one-shot %q", i, a[i], b[i])
			}
		}
	}
}

// eventsAfterClose reads a closed supervisor's events from its store file.
func (s *testSup) eventsAfterClose(t *testing.T, id string) ([]store.Event, error) {
	t.Helper()
	st, err := bolt.Open(storeDir(s.home), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ev []store.Event
	err = st.View(context.Background(), func(tx store.Tx) (err error) { ev, err = tx.Events(id); return err })
	return ev, err
}

// What is durable before dispatch is the same in a one-shot supervisor:
// when the launcher is asked for the worker, the job and its prepared
// attempt are in the store; a crash then leaves the attempt unknown.
func TestOneShotDurableBeforeDispatch(t *testing.T) {
	home := t.TempDir()
	launched := make(chan launch.Request, 1)
	release := make(chan struct{})
	var seen *store.Attempt
	var s *Supervisor
	l := &hookLauncher{launch: func(req launch.Request) (launch.Worker, error) {
		s.store.View(context.Background(), func(tx store.Tx) error {
			seen, _ = tx.Attempt(req.Job, req.Attempt)
			return nil
		})
		launched <- req
		<-release
		return nil, errors.New("the test's launcher launches nothing")
	}}
	s, _ = openStub(t, home, func(c *Config) { c.OneShot, c.Launcher = true, l })
	ctx := context.Background()
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, "d", protocol.OpExecute, add2, nil, protocol.Limits{}, nil),
		Retry: &store.RetryPolicy{MaxAttempts: 2}}); err != nil {
		t.Fatal(err)
	}
	req := <-launched
	if seen == nil || seen.State != lifecycle.Queued || seen.N != 1 || req.Attempt != 1 {
		t.Fatalf("at launch the store holds attempt %+v", seen)
	}
	// The process dies here: nothing more is written.
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.store.Close()
	s.sandboxes.Close()
	close(release)
	s.runs.Wait()
	s2, _ := openStub(t, home, nil)
	st, err := s2.Status(ctx, "d")
	if err != nil || st.Attempts[0].State != lifecycle.Unknown || st.Job.State != lifecycle.Queued {
		t.Fatalf("after the crash: %+v %v", st, err)
	}
}

// Status shows the steps a one-shot supervisor keeps before they are
// recorded.
func TestOneShotStatusShowsKeptSteps(t *testing.T) {
	s, _ := openStub(t, t.TempDir(), func(c *Config) { c.OneShot = true; c.Slots = 1 })
	ctx := context.Background()
	// Take the only slot, so that the submission queues as a daemon's
	// would, and prepare by hand.
	s.slotsSem <- struct{}{}
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, "k", protocol.OpExecute, add2, nil, protocol.Limits{}, nil)}); err != nil {
		t.Fatal(err)
	}
	a, _, err := s.prepareNext(ctx)
	if err != nil || a == nil {
		t.Fatal(err)
	}
	defer s.unregister(a)
	if err := s.transition(ctx, a, lifecycle.Running, "worker launched", nil); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Status(ctx, "k")
	var stored lifecycle.State
	s.store.View(ctx, func(tx store.Tx) error { j, _ := tx.Job("k"); stored = j.State; return nil })
	if st.Job.State != lifecycle.Running || st.Attempts[0].State != lifecycle.Running || stored != lifecycle.Queued {
		t.Fatalf("status %s/%s, store %s", st.Job.State, st.Attempts[0].State, stored)
	}
	s.finish(ctx, a, outcome{err: protocol.Errorf(protocol.CodeExecutionFailed, "x"), state: lifecycle.Failed})
	ev, _ := s.Events(ctx, "k")
	if n := len(ev); n < 2 || ev[n-2].To != lifecycle.Running || ev[n-1].To != lifecycle.Failed {
		t.Fatalf("events %+v", ev)
	}
	<-s.slotsSem
}

// hookLauncher launches through a test's function.
type hookLauncher struct {
	stubLauncher
	launch func(launch.Request) (launch.Worker, error)
}

func (h *hookLauncher) Launch(_ context.Context, req launch.Request) (launch.Worker, error) {
	return h.launch(req)
}
