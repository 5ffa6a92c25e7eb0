// Package storetest is the driver suite every store.Store implementation
// passes: the local bbolt store (supervisor/store) and the cluster store
// on etcd (supervisor/store/etcd) run the same tests against the same
// contract. Tests that look inside one implementation (bbolt's pages and
// migrations, etcd's keys and leases) stay with it.
package storetest

import (
	"context"
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

// Run runs the whole suite.
func Run(t *testing.T, b Backend) {
	t.Run("FrozenSpecAndTerminalJobs", func(t *testing.T) { FrozenSpecAndTerminalJobs(t, b) })
	t.Run("SeqTaken", func(t *testing.T) { SeqTaken(t, b) })
	t.Run("AttemptInvariants", func(t *testing.T) { AttemptInvariants(t, b) })
	t.Run("AcceptanceNeedsVerification", func(t *testing.T) { AcceptanceNeedsVerification(t, b) })
	t.Run("QueueOrderAndEvents", func(t *testing.T) { QueueOrderAndEvents(t, b) })
	t.Run("QueueVisitStops", func(t *testing.T) { QueueVisitStops(t, b) })
	t.Run("RemoveJob", func(t *testing.T) { RemoveJob(t, b) })
	t.Run("ResolveUnknown", func(t *testing.T) { ResolveUnknown(t, b) })
	t.Run("ForEachSubmitted", func(t *testing.T) { ForEachSubmitted(t, b) })
	t.Run("Unfinished", func(t *testing.T) { Unfinished(t, b) })
	t.Run("RollbackLeavesNothing", func(t *testing.T) { RollbackLeavesNothing(t, b) })
	t.Run("ConcurrentAcceptance", func(t *testing.T) { ConcurrentAcceptance(t, b) })
	t.Run("ConcurrentTakes", func(t *testing.T) { ConcurrentTakes(t, b) })
	t.Run("QueueOrderAcrossHandles", func(t *testing.T) { QueueOrderAcrossHandles(t, b) })
	t.Run("LifecycleProperties", func(t *testing.T) { LifecycleProperties(t, b.Fresh()) })
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
