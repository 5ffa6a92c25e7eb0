package storetest

import (
	"context"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The suite covers the whole contract: every method of store.Store and
// store.Tx is called by some test of it. Run hands the tests handles
// that pass every call through to the driver's and note its method, and
// its last test (EveryMethodCalled) fails for any method of the two
// interfaces that no test called: a method added to the contract needs
// a test here before both drivers' suites pass again.

// calls is the set of methods the suite's tests called.
type calls struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (c *calls) note(method string) {
	c.mu.Lock()
	c.seen[method] = true
	c.mu.Unlock()
}

// missing lists the methods of store.Store and store.Tx never called.
func (c *calls) missing() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, it := range []reflect.Type{reflect.TypeFor[store.Store](), reflect.TypeFor[store.Tx]()} {
		for i := range it.NumMethod() {
			if name := it.Name() + "." + it.Method(i).Name; !c.seen[name] {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// backend is b whose handles note their calls in c.
func (c *calls) backend(b Backend) Backend {
	next := b.New
	b.New = func(t testing.TB) Opener {
		open := next(t)
		return func(t testing.TB) store.Store { return &noted{s: open(t), c: c} }
	}
	return b
}

// noted is a driver's handle that notes the methods called on it and on
// its transactions.
type noted struct {
	s store.Store
	c *calls
}

func (n *noted) Update(ctx context.Context, fn func(store.Tx) error) error {
	n.c.note("Store.Update")
	return n.s.Update(ctx, func(tx store.Tx) error { return fn(notedTx{tx, n.c}) })
}

func (n *noted) Batch(ctx context.Context, fn func(store.Tx) error) error {
	n.c.note("Store.Batch")
	return n.s.Batch(ctx, func(tx store.Tx) error { return fn(notedTx{tx, n.c}) })
}

func (n *noted) View(ctx context.Context, fn func(store.Tx) error) error {
	n.c.note("Store.View")
	return n.s.View(ctx, func(tx store.Tx) error { return fn(notedTx{tx, n.c}) })
}

func (n *noted) Close() error {
	n.c.note("Store.Close")
	return n.s.Close()
}

type notedTx struct {
	tx store.Tx
	c  *calls
}

func (t notedTx) Meta() (store.Meta, error) { t.c.note("Tx.Meta"); return t.tx.Meta() }
func (t notedTx) PutMeta(m store.Meta) error {
	t.c.note("Tx.PutMeta")
	return t.tx.PutMeta(m)
}
func (t notedTx) NextSeq() (uint64, error) { t.c.note("Tx.NextSeq"); return t.tx.NextSeq() }
func (t notedTx) Job(id string) (*store.Job, error) {
	t.c.note("Tx.Job")
	return t.tx.Job(id)
}
func (t notedTx) CreateJob(j *store.Job, spec []byte) error {
	t.c.note("Tx.CreateJob")
	return t.tx.CreateJob(j, spec)
}
func (t notedTx) PutJob(j *store.Job) error { t.c.note("Tx.PutJob"); return t.tx.PutJob(j) }
func (t notedTx) Spec(id string) ([]byte, error) {
	t.c.note("Tx.Spec")
	return t.tx.Spec(id)
}
func (t notedTx) ForEachJob(fn func(*store.Job) bool) error {
	t.c.note("Tx.ForEachJob")
	return t.tx.ForEachJob(fn)
}
func (t notedTx) ForEachSubmitted(newestFirst bool, fn func(*store.Job) bool) error {
	t.c.note("Tx.ForEachSubmitted")
	return t.tx.ForEachSubmitted(newestFirst, fn)
}
func (t notedTx) ForEachSubmittedFrom(from uint64, newestFirst bool, fn func(*store.Job) bool) error {
	t.c.note("Tx.ForEachSubmittedFrom")
	return t.tx.ForEachSubmittedFrom(from, newestFirst, fn)
}
func (t notedTx) ForEachSubmittedSummary(from uint64, newestFirst bool, fn func(*store.JobSummary) bool) error {
	t.c.note("Tx.ForEachSubmittedSummary")
	return t.tx.ForEachSubmittedSummary(from, newestFirst, fn)
}
func (t notedTx) ForEachJobFrom(from string, fn func(*store.Job) bool) error {
	t.c.note("Tx.ForEachJobFrom")
	return t.tx.ForEachJobFrom(from, fn)
}
func (t notedTx) ForEachLive(fn func(*store.Job) bool) error {
	t.c.note("Tx.ForEachLive")
	return t.tx.ForEachLive(fn)
}
func (t notedTx) RemoveJob(id string, removed time.Time) (*store.Tombstone, error) {
	t.c.note("Tx.RemoveJob")
	return t.tx.RemoveJob(id, removed)
}
func (t notedTx) Tombstone(id string) (*store.Tombstone, error) {
	t.c.note("Tx.Tombstone")
	return t.tx.Tombstone(id)
}
func (t notedTx) Attempt(job string, n uint32) (*store.Attempt, error) {
	t.c.note("Tx.Attempt")
	return t.tx.Attempt(job, n)
}
func (t notedTx) PutAttempt(a *store.Attempt) error {
	t.c.note("Tx.PutAttempt")
	return t.tx.PutAttempt(a)
}
func (t notedTx) Attempts(job string) ([]*store.Attempt, error) {
	t.c.note("Tx.Attempts")
	return t.tx.Attempts(job)
}
func (t notedTx) AppendEvent(e store.Event) error {
	t.c.note("Tx.AppendEvent")
	return t.tx.AppendEvent(e)
}
func (t notedTx) Events(job string) ([]store.Event, error) {
	t.c.note("Tx.Events")
	return t.tx.Events(job)
}
func (t notedTx) Enqueue(job string, priority int32, seq uint64) error {
	t.c.note("Tx.Enqueue")
	return t.tx.Enqueue(job, priority, seq)
}
func (t notedTx) Dequeue(job string) error { t.c.note("Tx.Dequeue"); return t.tx.Dequeue(job) }
func (t notedTx) Queued(n int) ([]string, error) {
	t.c.note("Tx.Queued")
	return t.tx.Queued(n)
}
func (t notedTx) ForEachQueued(fn func(job string) bool) error {
	t.c.note("Tx.ForEachQueued")
	return t.tx.ForEachQueued(fn)
}
func (t notedTx) QueueLen() (int, error) { t.c.note("Tx.QueueLen"); return t.tx.QueueLen() }
func (t notedTx) ForEachUnfinished(fn func(*store.Attempt) bool) error {
	t.c.note("Tx.ForEachUnfinished")
	return t.tx.ForEachUnfinished(fn)
}
func (t notedTx) JobClaim(job string, n uint32) (*store.JobClaim, error) {
	t.c.note("Tx.JobClaim")
	return t.tx.JobClaim(job, n)
}
func (t notedTx) RecordJobClaim(c *store.JobClaim) error {
	t.c.note("Tx.RecordJobClaim")
	return t.tx.RecordJobClaim(c)
}
