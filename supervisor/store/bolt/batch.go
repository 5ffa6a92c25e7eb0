package bolt

import (
	"context"
	"fmt"
	"sync"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// batcher is the store's group commit: Batch calls that arrive while a
// commit is being written wait and then share the next one, so that many
// writers in flight pay one fsync between them instead of one each. A
// lone caller commits at once (no timer). Each function runs on the same
// transaction after the ones before it, so it sees their writes: two
// claims for one attempt in one batch are still decided one after the
// other, and the second is refused.
type batcher struct {
	s       *Store
	mu      sync.Mutex
	pending []*batchCall
	running bool
}

type batchCall struct {
	fn   func(*boltTx) error
	done chan error
}

// Batch is Update, but the transaction may be shared with concurrent
// Batch calls. fn may run more than once (when another function of the
// same batch fails, the batch is rolled back and run again without it),
// so it must act only through tx and set its results from scratch each
// time. A function that fails is run once more on its own, after the
// rest committed, and its error is returned.
func (s *Store) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return s.batchTx(ctx, func(t *boltTx) error { return fn(t) })
}

func (s *Store) batchTx(ctx context.Context, fn func(*boltTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := &batchCall{fn: fn, done: make(chan error, 1)}
	b := &s.batch
	b.mu.Lock()
	b.pending = append(b.pending, c)
	if !b.running {
		b.running = true
		go b.loop()
	}
	b.mu.Unlock()
	// Once queued the call is decided by the committer: waiting for it
	// is the only way to know whether it committed.
	return <-c.done
}

func (b *batcher) loop() {
	for {
		b.mu.Lock()
		calls := b.pending
		b.pending = nil
		if len(calls) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.commit(calls)
	}
}

// commit runs calls in one transaction. A failing call is taken out and
// the rest run again; the failed ones then run each on its own.
func (b *batcher) commit(calls []*batchCall) {
	var solo []*batchCall
	for len(calls) > 0 {
		failed := -1
		err := b.s.update(func(tx *bbolt.Tx) error {
			btx := &boltTx{tx: tx, s: b.s}
			for i, c := range calls {
				if err := c.run(btx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			for _, c := range calls {
				c.done <- err
			}
			break
		}
		solo = append(solo, calls[failed])
		calls = append(calls[:failed:failed], calls[failed+1:]...)
	}
	for _, c := range solo {
		c.done <- b.s.update(func(tx *bbolt.Tx) error { return c.run(&boltTx{tx: tx, s: b.s}) })
	}
}

// run calls fn, turning a panic into that call's error: the committer
// serves every writer, and one bad function must not take the others
// (or the process) down.
func (c *batchCall) run(tx *boltTx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: batched transaction panicked: %v", store.ErrInvariant, r)
		}
	}()
	return c.fn(tx)
}
