package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// handles opens n handles on one backing store: n of their own for a
// shared backend (as n hosts would), else the one handle n times.
func handles(t *testing.T, b Backend, n int) []store.Store {
	s, open := b.Open(t)
	out := []store.Store{s}
	for len(out) < n {
		if !b.Shared {
			out = append(out, s)
			continue
		}
		h := open(t)
		t.Cleanup(func() { h.Close() })
		out = append(out, h)
	}
	return out
}

// ConcurrentAcceptance: attempts of one job, each verified, accepted at
// the same time through different handles: exactly one is.
func ConcurrentAcceptance(t *testing.T, b Backend) {
	const n = 6
	hs := handles(t, b, 3)
	j := NewJob("race")
	j.Attempts = n
	if err := update(hs[0], func(tx store.Tx) error {
		if err := Create(tx, j); err != nil {
			return err
		}
		for i := uint32(1); i <= n; i++ {
			a := &store.Attempt{Job: j.ID, N: i, Boot: "b", State: lifecycle.Queued, Verified: []byte(`{}`)}
			for _, st := range []lifecycle.State{lifecycle.Queued, lifecycle.Running, lifecycle.Produced, lifecycle.Verified} {
				a.State = st
				if err := tx.PutAttempt(a); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = update(hs[i%len(hs)], func(tx store.Tx) error {
				a, err := tx.Attempt(j.ID, uint32(i+1))
				if err != nil {
					return err
				}
				a.State = lifecycle.Accepted
				if err := tx.PutAttempt(a); err != nil {
					return err
				}
				job, err := tx.Job(j.ID)
				if err != nil {
					return err
				}
				job.State, job.Accepted = lifecycle.Accepted, a.N
				return tx.PutJob(job)
			})
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrInvariant):
			t.Errorf("acceptance %d: %v, want ErrInvariant", i+1, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d acceptances committed: %v", won, errs)
	}
	view(t, hs[1], func(tx store.Tx) error {
		atts, err := tx.Attempts(j.ID)
		if err != nil {
			return err
		}
		acc := 0
		for _, a := range atts {
			if a.State == lifecycle.Accepted {
				acc++
			}
		}
		job, err := tx.Job(j.ID)
		if err != nil {
			return err
		}
		if acc != 1 || job.State != lifecycle.Accepted || job.Accepted == 0 {
			t.Fatalf("%d accepted attempts, job %s accepted %d", acc, job.State, job.Accepted)
		}
		return nil
	})
}

// ConcurrentTakes: workers on several handles take jobs from the head of
// the queue, each preparing the job's attempt in the transaction that
// dequeues it: every job is taken once, none twice.
func ConcurrentTakes(t *testing.T, b Backend) {
	const jobs = 40
	hs := handles(t, b, 3)
	type place struct {
		pri int32
		seq uint64
	}
	places := map[string]place{}
	for b := 0; b < jobs; b += 10 {
		if err := update(hs[0], func(tx store.Tx) error {
			for i := b; i < b+10; i++ {
				j := NewJob(fmt.Sprintf("take-%02d", i))
				if err := Create(tx, j); err != nil {
					return err
				}
				if err := tx.Enqueue(j.ID, int32(i%3), j.Seq); err != nil {
					return err
				}
				places[j.ID] = place{int32(i % 3), j.Seq}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu    sync.Mutex
		taken = map[string]int{}
		wg    sync.WaitGroup
		fail  = make(chan error, 6)
	)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := hs[w%len(hs)]
			// Every take starts after this worker's previous one
			// committed, when nothing was queued ahead of that job any
			// more: its takes follow the queue's order (priority, then
			// seq), whatever the other workers took meanwhile.
			var last string
			for {
				var got string
				err := update(h, func(tx store.Tx) error {
					got = ""
					var id string
					if err := tx.ForEachQueued(func(job string) bool { id = job; return false }); err != nil || id == "" {
						return err
					}
					j, err := tx.Job(id)
					if err != nil {
						return err
					}
					if err := tx.Dequeue(id); err != nil {
						return err
					}
					j.Attempts++
					if err := tx.PutJob(j); err != nil {
						return err
					}
					if err := tx.PutAttempt(&store.Attempt{Job: id, N: j.Attempts, Boot: fmt.Sprint("w", w), State: lifecycle.Queued}); err != nil {
						return err
					}
					got = id
					return nil
				})
				if err != nil {
					fail <- err
					return
				}
				if got == "" {
					return
				}
				if last != "" {
					p, q := places[last], places[got]
					if q.pri > p.pri || q.pri == p.pri && q.seq < p.seq {
						fail <- fmt.Errorf("worker %d took %s (priority %d, seq %d) after %s (priority %d, seq %d)", w, got, q.pri, q.seq, last, p.pri, p.seq)
						return
					}
				}
				last = got
				mu.Lock()
				taken[got]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Fatal(err)
	}
	if len(taken) != jobs {
		t.Fatalf("%d jobs taken, want %d", len(taken), jobs)
	}
	for id, n := range taken {
		if n != 1 {
			t.Errorf("job %s taken %d times", id, n)
		}
	}
	view(t, hs[2], func(tx store.Tx) error {
		for id := range taken {
			atts, err := tx.Attempts(id)
			if err != nil {
				return err
			}
			if len(atts) != 1 {
				t.Errorf("job %s has %d attempts", id, len(atts))
			}
		}
		if n, _ := tx.QueueLen(); n != 0 {
			t.Errorf("%d jobs left in the queue", n)
		}
		return nil
	})
}

// QueueOrderAcrossHandles: jobs queued through different handles (hosts)
// are taken through any handle in one order, priority then FIFO, each
// handle seeing what the others queued since its own last commit.
func QueueOrderAcrossHandles(t *testing.T, b Backend) {
	hs := handles(t, b, 3)
	queue := []struct {
		id  string
		pri int32
	}{{"o-low-1", -1}, {"o-mid-1", 0}, {"o-low-2", -1}, {"o-high-1", 5}, {"o-mid-2", 0}, {"o-high-2", 5}, {"o-low-3", -1}}
	want := []string{"o-high-1", "o-high-2", "o-mid-1", "o-mid-2", "o-low-1", "o-low-2", "o-low-3"}
	for i, q := range queue {
		if err := update(hs[i%len(hs)], func(tx store.Tx) error {
			j := NewJob(q.id)
			j.Priority = q.pri
			if err := Create(tx, j); err != nil {
				return err
			}
			return tx.Enqueue(j.ID, q.pri, j.Seq)
		}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for i := range queue {
		// The handle that queued the last job takes first: what it last
		// committed is not all there is.
		h := hs[(len(queue)-1+i)%len(hs)]
		if err := update(h, func(tx store.Tx) error {
			var id string
			if err := tx.ForEachQueued(func(job string) bool { id = job; return false }); err != nil {
				return err
			}
			if id == "" {
				return fmt.Errorf("take %d: the queue is empty", i+1)
			}
			got = append(got[:i], id)
			return tx.Dequeue(id)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("taken in the order %v, want %v", got, want)
	}
}
