// Package storetest is the driver suite every store.Store implementation
// passes: the local bbolt store (supervisor/store/bolt) and the cluster store
// on etcd (supervisor/store/etcd) run the same tests against the same
// contract. Tests that look inside one implementation (bbolt's pages and
// migrations, etcd's keys and leases) stay with it.
package storetest

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Opener opens a handle on one backing store: again after the previous
// handle was closed (a restart), and, for a Shared backend, while other
// handles are open (other hosts).
type Opener func(t testing.TB) store.Store

// Backend makes empty backing stores.
type Backend struct {
	// New makes an empty backing store and returns its opener.
	New func(t testing.TB) Opener
	// Shared: several handles may be open on one backing store at once.
	Shared bool
}

// Run runs the whole suite, and last checks that its tests called every
// method of store.Store and store.Tx (coverage.go).
func Run(t *testing.T, b Backend) {
	c := &calls{seen: map[string]bool{}}
	b = c.backend(b)
	all := true
	run := func(name string, test func(*testing.T, Backend)) {
		ran := false
		t.Run(name, func(t *testing.T) { ran = true; test(t, b) })
		all = all && ran
	}
	run("FrozenSpecAndTerminalJobs", FrozenSpecAndTerminalJobs)
	run("SeqTaken", SeqTaken)
	run("MetaAndSeq", MetaAndSeq)
	run("ForEachJob", ForEachJob)
	run("Batch", Batch)
	run("JobClaims", JobClaims)
	run("AttemptInvariants", AttemptInvariants)
	run("AcceptanceNeedsVerification", AcceptanceNeedsVerification)
	run("QueueOrderAndEvents", QueueOrderAndEvents)
	run("QueueVisitStops", QueueVisitStops)
	run("RemoveJob", RemoveJob)
	run("ResolveUnknown", ResolveUnknown)
	run("ForEachSubmitted", ForEachSubmitted)
	run("SubmittedFrom", SubmittedFrom)
	run("JobFrom", JobFrom)
	run("Unfinished", Unfinished)
	run("RollbackLeavesNothing", RollbackLeavesNothing)
	run("ConcurrentAcceptance", ConcurrentAcceptance)
	run("ConcurrentTakes", ConcurrentTakes)
	run("QueueOrderAcrossHandles", QueueOrderAcrossHandles)
	run("LifecycleProperties", func(t *testing.T, b Backend) { LifecycleProperties(t, b.Fresh()) })
	t.Run("EveryMethodCalled", func(t *testing.T) {
		if !all {
			t.Skip("-run left tests of the suite out: what they call is not known")
		}
		if missing := c.missing(); len(missing) > 0 {
			t.Fatalf("no test of the suite calls %s", strings.Join(missing, ", "))
		}
	})
}

// Open makes a new backing store and opens a handle, closed at cleanup.
func (b Backend) Open(t testing.TB) (store.Store, Opener) {
	t.Helper()
	o := b.New(t)
	s := o(t)
	t.Cleanup(func() { s.Close() })
	return s, o
}

// SpecOf is the frozen spec the tests give job id.
func SpecOf(id string) []byte { return []byte(`{"job_id":"` + id + `"}`) }

var testSeq atomic.Uint64

// NewJob is a queued job whose spec is SpecOf(id), with a seq of its own.
func NewJob(id string) *store.Job {
	now := time.Unix(1700000000, 0).UTC()
	return &store.Job{ID: id, SpecDigest: store.SpecDigest(SpecOf(id)), State: lifecycle.Queued, Seq: testSeq.Add(1),
		Created: now, Updated: now, Retry: store.RetryPolicy{MaxAttempts: 1}}
}

// Create stores a new job with its spec (SpecOf).
func Create(tx store.Tx, j *store.Job) error { return tx.CreateJob(j, SpecOf(j.ID)) }

func update(s store.Store, fn func(store.Tx) error) error {
	return s.Update(context.Background(), fn)
}

func view(t testing.TB, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}
