package fencing

import (
	"context"
	"errors"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/hemera"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// DefaultPolicy is the policy particle a neuron starts with.
var DefaultPolicy = neuron.Particle(hemera.Hash([]byte("cyber/neuron/default-policy/1")).Bytes())

// InitNeuron makes the neuron: a key in the vault (once), the root
// (generation 0, epoch 1, the default policy, the network pinned) and
// the first grant (revision 0, enabled, no acts). An init that a crash
// cut after the key was written completes with that key.
func (e *Engine) InitNeuron(ctx context.Context, network string) (*store.Root, *store.Grant, error) {
	if !protocol.ValidText(network) {
		return nil, nil, protocol.Errorf(protocol.CodeInvalidJob, "network must be 1-128 printable ASCII")
	}
	e.keyMu.Lock()
	defer e.keyMu.Unlock()
	e.guard.Lock()
	defer e.guard.Unlock()
	if err := e.view(ctx, func(tx store.FencingTx) error {
		_, err := tx.Root()
		switch {
		case err == nil, errors.Is(err, store.ErrUntrusted), errors.Is(err, store.ErrTampered), errors.Is(err, store.ErrSubject):
			return refuse(Conflict, "this home already has a neuron")
		case errors.Is(err, store.ErrNotFound):
			return nil
		}
		return err
	}); err != nil {
		return nil, nil, err
	}
	k := e.key
	if k == nil {
		var err error
		if e.vault.HasKey() {
			k, err = e.vault.Load()
		} else {
			k, err = e.vault.Init()
		}
		if err != nil {
			return nil, nil, err
		}
		if err := e.trust.SetSigner(k); err != nil {
			return nil, nil, err
		}
	}
	now := e.now()
	root := &store.Root{Neuron: k.ID(), PublicKey: k.PublicKey(), Profile: neuron.Profile, Network: network,
		Policy: DefaultPolicy, Epoch: 1, Updated: now, Records: store.RecordsAuthenticated}
	grant := &store.Grant{Neuron: k.ID(), Network: network, Policy: DefaultPolicy, Epoch: 1, Revision: 0,
		Enabled: true, Acts: store.U64s{}, Created: now}
	var err error
	if root.Signature, err = k.Sign(root.Statement()); err != nil {
		return nil, nil, err
	}
	if grant.Signature, err = k.Sign(grant.Statement()); err != nil {
		return nil, nil, err
	}
	if err := e.st.Update(ctx, func(tx store.FencingTx) error {
		// The claims of job attempts made before the neuron existed
		// have no tag: they get theirs before the root says every
		// record has one.
		_, left, err := tx.AuthenticateRecords(nil)
		if err != nil {
			return err
		}
		if left > 0 {
			// Records a neuron writes, in a store that has no neuron:
			// they were written without the vault, and a new root
			// would adopt them.
			return refuse(Conflict, "the store holds %d fencing records but no neuron root: it was altered (store check names them)", left)
		}
		if err := tx.PutRoot(root); err != nil {
			return err
		}
		return tx.PutGrant(grant)
	}); err != nil {
		return nil, nil, storeError(err)
	}
	e.key = k
	e.markVault()
	e.log.Info("neuron initialised", "neuron", root.Neuron.String(), "network", network)
	return root, grant, nil
}

// Root is the neuron root.
func (e *Engine) Root(ctx context.Context) (*store.Root, error) {
	var r *store.Root
	err := e.view(ctx, func(tx store.FencingTx) (err error) { r, err = tx.Root(); return err })
	if errors.Is(err, store.ErrNotFound) {
		return nil, noNeuron()
	}
	return r, storeError(err)
}

// Grant is the current grant.
func (e *Engine) Grant(ctx context.Context) (*store.Grant, error) {
	var g *store.Grant
	err := e.view(ctx, func(tx store.FencingTx) (err error) { g, err = tx.Grant(); return err })
	if errors.Is(err, store.ErrNotFound) {
		return nil, noNeuron()
	}
	return g, storeError(err)
}

// ChangePolicy moves the neuron to a new policy under a strictly larger
// epoch. It is the key holder's own act and needs no grant; the current
// grant no longer matches afterwards, so everything is denied until a
// grant for the new policy and epoch is set. Invocations admitted under
// the old epoch wait until rebound.
func (e *Engine) ChangePolicy(ctx context.Context, policy neuron.Particle, epoch uint64) (*store.Root, error) {
	e.guard.Lock()
	defer e.guard.Unlock()
	var out *store.Root
	err := e.st.Update(ctx, func(tx store.FencingTx) error {
		r, err := tx.Root()
		if err != nil {
			return storeError(err)
		}
		if epoch <= r.Epoch {
			return refuse(Conflict, "epoch %d is not above the current %d", epoch, r.Epoch)
		}
		r.Policy, r.Epoch, r.Updated = policy, epoch, e.now()
		if r.Signature, err = e.sign(r.Statement()); err != nil {
			return err
		}
		out = r
		return storeError(tx.PutRoot(r))
	})
	if err != nil {
		return nil, err
	}
	e.log.Info("policy changed", "policy", policy.String(), "epoch", epoch)
	return out, nil
}

// GrantSpec is what SetGrant writes.
type GrantSpec struct {
	Acts []uint64
	// Progs limits the grant to these progs; nil means every prog.
	Progs    []string
	Disabled bool
}

// SetGrant replaces the grant: a CAS from the expected current revision
// to the next, for the root's current policy and epoch. It takes the
// ward guard for writing, so a dispatch is ordered entirely before or
// after it. Like ChangePolicy it is the key holder's act and needs no
// grant (a disabled grant is re-enabled this way).
func (e *Engine) SetGrant(ctx context.Context, expected uint64, spec GrantSpec) (*store.Grant, error) {
	acts := slices.Clone(spec.Acts)
	slices.Sort(acts)
	acts = slices.Compact(acts)
	var progs []string
	if spec.Progs != nil {
		progs = slices.Clone(spec.Progs)
		slices.Sort(progs)
		progs = slices.Compact(progs)
	}
	e.guard.Lock()
	defer e.guard.Unlock()
	var out *store.Grant
	err := e.st.Update(ctx, func(tx store.FencingTx) error {
		root, err := tx.Root()
		if err != nil {
			return storeError(err)
		}
		cur, err := tx.Grant()
		if err != nil {
			return storeError(err)
		}
		if cur.Revision != expected {
			return refuse(Conflict, "the grant is at revision %d, not %d", cur.Revision, expected)
		}
		g := &store.Grant{Neuron: root.Neuron, Network: root.Network, Policy: root.Policy, Epoch: root.Epoch,
			Revision: cur.Revision + 1, Enabled: !spec.Disabled, Acts: store.U64s(acts), Progs: progs, Created: e.now()}
		if g.Acts == nil {
			g.Acts = store.U64s{}
		}
		if g.Signature, err = e.sign(g.Statement()); err != nil {
			return err
		}
		out = g
		return storeError(tx.PutGrant(g))
	})
	if err != nil {
		return nil, err
	}
	e.log.Info("grant replaced", "revision", out.Revision, "enabled", out.Enabled, "acts", len(out.Acts))
	return out, nil
}

// Bind places this engine's embedded worker: a CAS from the expected
// generation to the next.
func (e *Engine) Bind(ctx context.Context, expected uint64) (*store.Root, error) {
	return e.place(ctx, expected, func(r *store.Root) *protocol.WorkerDescriptor {
		d := e.Descriptor(r.Network)
		return &d
	})
}

// BindWorker places a given descriptor (one this host supports).
func (e *Engine) BindWorker(ctx context.Context, expected uint64, d protocol.WorkerDescriptor) (*store.Root, error) {
	if err := supported(d); err != nil {
		return nil, err
	}
	return e.place(ctx, expected, func(*store.Root) *protocol.WorkerDescriptor { return &d })
}

// Release removes the worker: a CAS from the expected generation to the
// next, with no worker. Undispatched tokens of the released worker are
// fenced from then on.
func (e *Engine) Release(ctx context.Context, expected uint64) (*store.Root, error) {
	return e.place(ctx, expected, func(*store.Root) *protocol.WorkerDescriptor { return nil })
}

// BindBoot binds this boot's worker at whatever generation is current:
// the daemon does it at every start, so a new boot never inherits the
// previous one's lease. Only the exclusive owner of the store may do
// this, which the store's lock ensures.
func (e *Engine) BindBoot(ctx context.Context) (*store.Root, error) {
	r, err := e.Root(ctx)
	if err != nil {
		return nil, err
	}
	return e.Bind(ctx, r.Generation)
}

func (e *Engine) place(ctx context.Context, expected uint64, worker func(*store.Root) *protocol.WorkerDescriptor) (*store.Root, error) {
	e.guard.Lock()
	defer e.guard.Unlock()
	var out *store.Root
	err := e.st.Update(ctx, func(tx store.FencingTx) error {
		root, _, err := authority(tx, management("placement", ""))
		if err != nil {
			return err
		}
		if root.Generation != expected {
			return refuse(Conflict, "the placement is at generation %d, not %d", root.Generation, expected)
		}
		w := worker(root)
		if w != nil {
			if err := supported(*w); err != nil {
				return err
			}
			if w.Network != root.Network {
				return refuse(Denied, "the worker is for network %q, the neuron for %q", w.Network, root.Network)
			}
		}
		root.Generation++
		root.Worker, root.Updated = w, e.now()
		if root.Signature, err = e.sign(root.Statement()); err != nil {
			return err
		}
		out = root
		return storeError(tx.PutRoot(root))
	})
	if err != nil {
		return nil, err
	}
	boot := ""
	if out.Worker != nil {
		boot = out.Worker.Executor.BootID
	}
	e.log.Info("placement moved", "generation", out.Generation, "boot", boot)
	return out, nil
}

// SignJobClaim signs a job attempt's claim with the neuron key. A home
// without a neuron signs nothing: its claims have generation 0 and no
// signature.
func (e *Engine) SignJobClaim(c *store.JobClaim) error {
	e.keyMu.RLock()
	k := e.key
	e.keyMu.RUnlock()
	if k == nil {
		c.Signature = nil
		return nil
	}
	sig, err := k.Sign(c.Statement())
	if err != nil {
		return err
	}
	c.Signature = sig
	return storeError(e.trust.Preverify(c))
}

// HasNeuron reports whether the home's neuron is initialised here.
func (e *Engine) HasNeuron() bool {
	e.keyMu.RLock()
	defer e.keyMu.RUnlock()
	return e.key != nil
}
