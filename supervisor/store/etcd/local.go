package etcd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// What the fencing work added to the store (docs/fencing.md) splits in
// two on a cluster. The job attempts' claims are the job store's: they
// live here, beside the attempts (jobclaims/<id>\0<n>), written once in
// the transaction that prepares the attempt, under the same registration
// compare. The neuron, its grants, progs, invocations and host acts stay
// in each home's own store (docs/cluster.md, "Host acts stay local"):
// this store is a store.Store and nothing more; the fencing store
// (store.Fencing) is only the home's bbolt file's.

// Batch is Update: fn may run more than once either way.
func (s *Store) Batch(ctx context.Context, fn func(store.Tx) error) error { return s.Update(ctx, fn) }

// checkSigned verifies a signature this host is about to write. Claims
// read back are not verified: a claim of another host is signed by that
// host's neuron, whose key this one does not hold.
func (s *Store) checkSigned(what string, st *neuron.Statement, sig []byte) error {
	return s.trust.Check(what, st, sig)
}

func (t *tx) JobClaim(job string, n uint32) (*store.JobClaim, error) {
	k := t.s.k.jobClaim(job, n)
	raw, ok, _, err := t.get(k)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("claim of job attempt %s/%d: %w", job, n, store.ErrNotFound)
	}
	c := new(store.JobClaim)
	if err := t.decodeJSON(k, raw, c); err != nil {
		return nil, err
	}
	if c.Job != job || c.Attempt != n {
		return nil, fmt.Errorf("job claim %q: %w: the record names %s/%d", k, store.ErrTampered, c.Job, c.Attempt)
	}
	return c, nil
}

// RecordJobClaim writes an attempt's claim once: for an attempt that has
// not ended, in the attempt's generation (a joined handle's: its own),
// signed by this host's neuron when it has one.
func (t *tx) RecordJobClaim(c *store.JobClaim) error {
	k := t.s.k.jobClaim(c.Job, c.Attempt)
	if _, ok, _, err := t.get(k); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("claim job attempt %s/%d: %w", c.Job, c.Attempt, store.ErrClaimed)
	}
	a, err := t.Attempt(c.Job, c.Attempt)
	if err != nil {
		return fmt.Errorf("claim job attempt: %w", err)
	}
	if a.State.Terminal() {
		return fmt.Errorf("claim job attempt %s/%d: %w: it ended %s", c.Job, c.Attempt, store.ErrInvariant, a.State)
	}
	if err := c.Worker.Validate(); err != nil {
		return fmt.Errorf("claim job attempt %s/%d: %w: worker: %v", c.Job, c.Attempt, store.ErrInvariant, err)
	}
	if c.Generation != a.Generation {
		return fmt.Errorf("claim job attempt %s/%d: %w: generation %d, the attempt was prepared in %d", c.Job, c.Attempt, store.ErrConflict, c.Generation, a.Generation)
	}
	if len(c.Signature) > 0 {
		if err := t.s.checkSigned(fmt.Sprintf("claim of job attempt %s/%d", c.Job, c.Attempt), c.Statement(), c.Signature); err != nil {
			return err
		}
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode job claim: %w", err)
	}
	t.put(k, raw)
	return nil
}
