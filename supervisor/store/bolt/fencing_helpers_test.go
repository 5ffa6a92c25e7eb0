package bolt

import (
	"context"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// fx is a store with a neuron: its key, and helpers that build and sign
// records the way the engine does.
type fx struct {
	t   testing.TB
	dir string
	key *neuron.Key
	s   *Store
	now time.Time
}

var fxPolicy = neuron.Particle{1, 2, 3}

func newFx(t testing.TB) *fx {
	t.Helper()
	k, err := neuron.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	f := &fx{t: t, dir: t.TempDir(), key: k, now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	f.reopen()
	return f
}

func (f *fx) reopen() {
	f.t.Helper()
	if f.s != nil {
		f.s.Close()
	}
	s, err := Open(f.dir, time.Second)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := s.Trust().SetSigner(f.key); err != nil {
		f.t.Fatal(err)
	}
	f.s = s
	f.t.Cleanup(func() { s.Close() })
}

func (f *fx) sign(st *neuron.Statement) store.Hex {
	f.t.Helper()
	sig, err := f.key.Sign(st)
	if err != nil {
		f.t.Fatal(err)
	}
	return sig
}

func (f *fx) update(fn func(store.LocalTx) error) error {
	return f.s.Local().Update(context.Background(), fn)
}

func (f *fx) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fx) root(gen, epoch uint64, w *protocol.WorkerDescriptor) *store.Root {
	r := &store.Root{Neuron: f.key.ID(), PublicKey: f.key.PublicKey(), Profile: neuron.Profile, Network: "testnet",
		Policy: fxPolicy, Epoch: epoch, Generation: gen, Worker: w, Updated: f.now, Records: store.RecordsAuthenticated}
	r.Signature = f.sign(r.Statement())
	return r
}

func worker(boot string) *protocol.WorkerDescriptor {
	return &protocol.WorkerDescriptor{
		Machine: protocol.MachineNativeGo, Environment: protocol.EnvHostAct, ProofProfile: protocol.ProfileNone,
		Network: "testnet",
		Executor: protocol.Executor{Warrior: protocol.WarriorCyberSupervisor, Version: "test", Backend: protocol.BackendEmbeddedSync,
			WorkerID: "w", DeviceID: "d", BootID: boot},
		MaxArgumentBytes: 1 << 16, Acts: []uint64{1, 6},
	}
}

func (f *fx) grant(rev uint64, acts ...uint64) *store.Grant {
	g := &store.Grant{Neuron: f.key.ID(), Network: "testnet", Policy: fxPolicy, Epoch: 1, Revision: rev, Enabled: true, Acts: acts, Created: f.now}
	g.Signature = f.sign(g.Statement())
	return g
}

// testProgram is [16 [[1 6] [1 0]]]: call act 6 and accept its witness.
func testProgram(t testing.TB) noun.Noun {
	n, err := noun.Parse("[16 [[1 6] [1 0]]]")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *fx) prog(limit, inflight uint64) *store.Prog {
	p := testProgram(f.t)
	part := neuron.Particle(p.Particle())
	return &store.Prog{ID: store.ProgID(f.key.ID(), part), Neuron: f.key.ID(), Environment: protocol.EnvHostAct,
		Program: noun.AppendTokens(nil, p), Particle: part, State: store.ProgInstalled,
		StepLimit: limit, MaxInFlight: inflight, Acts: store.U64s{6}, Created: f.now, Updated: f.now}
}

// setup makes root (bound to boot "b1" at generation 1), grant 0, an
// active prog and one invocation; it returns them.
func (f *fx) setup() (*store.Prog, *store.Invocation) {
	f.t.Helper()
	p := f.prog(100, 4)
	inv := &store.Invocation{Neuron: f.key.ID(), Network: "testnet", Prog: p.ID, Limit: 100, Epoch: 1,
		Status: store.InvocationRunning, Inputs: store.U64s{7}, Created: f.now, Updated: f.now}
	f.must(f.update(func(tx store.LocalTx) error {
		if err := tx.PutRoot(f.root(0, 1, nil)); err != nil {
			return err
		}
		if err := tx.PutRoot(f.root(1, 1, worker("b1"))); err != nil {
			return err
		}
		if err := tx.PutGrant(f.grant(0, 6)); err != nil {
			return err
		}
		if err := tx.CreateProg(p); err != nil {
			return err
		}
		p.State = store.ProgActive
		if err := tx.PutProg(p); err != nil {
			return err
		}
		return tx.CreateInvocation(inv)
	}))
	return p, inv
}

func (f *fx) operation(inv *store.Invocation, ordinal uint64) *store.Operation {
	arg := noun.AppendTokens(nil, noun.Cons(noun.Atom(7), noun.Atom(0)))
	return &store.Operation{ID: store.OperationID(inv.Neuron, inv.Prog, inv.ID, ordinal), Neuron: inv.Neuron, Network: inv.Network,
		Prog: inv.Prog, Invocation: inv.ID, Ordinal: ordinal, Tag: 6, Argument: arg, Policy: fxPolicy, Epoch: 1, Created: f.now, Updated: f.now}
}

func (f *fx) attempt(op *store.Operation, gen uint64, w *protocol.WorkerDescriptor) *store.ActAttempt {
	exec := store.ExecutorWorker
	if w == nil {
		exec = store.ExecutorManual
	}
	a := &store.ActAttempt{Operation: op.ID, N: 1, Neuron: op.Neuron, Network: op.Network, Prog: op.Prog, Invocation: op.Invocation,
		Tag: op.Tag, OpDigest: store.OperationDigest(op), Executor: exec, Worker: w, Generation: gen, Policy: op.Policy, Epoch: op.Epoch, Created: f.now}
	a.Authorization = f.sign(a.Statement())
	return a
}

func (f *fx) claim(op *store.Operation, gen uint64, w *protocol.WorkerDescriptor) *store.Claim {
	c := &store.Claim{Operation: op.ID, Attempt: 1, Generation: gen, Worker: *w, Created: f.now}
	c.Signature = f.sign(c.Statement())
	return c
}
