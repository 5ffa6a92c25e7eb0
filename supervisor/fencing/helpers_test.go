package fencing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// Act tags of the tests: the built-in host, and a counting act whose
// behaviour a test sets.
const (
	tagHost  = hostact.TagHost
	tagCount = 0xAC750000000000F0
)

// counter is an act that counts its calls and does what it is told:
// return its argument (default), a fixed value, fail, say unknown, panic,
// or wait for a signal.
type counter struct {
	calls   atomic.Int64
	mu      sync.Mutex
	mode    string // "", "fail", "unknown", "panic", "block"
	value   *noun.Noun
	gate    chan struct{}
	entered chan struct{}
	last    noun.Noun // the last argument it was given
	// onCall, if set, runs first in every call (a property test's checks).
	onCall func(hostact.Call)
}

func (c *counter) set(mode string) {
	c.mu.Lock()
	c.mode = mode
	c.mu.Unlock()
}

func (c *counter) fn(ctx context.Context, call hostact.Call) hostact.Result {
	c.calls.Add(1)
	c.mu.Lock()
	if c.onCall != nil {
		c.onCall(call)
	}
	mode, value, gate, entered := c.mode, c.value, c.gate, c.entered
	c.last = call.Argument
	c.mu.Unlock()
	switch mode {
	case "fail":
		return hostact.Failed("told to fail")
	case "unknown":
		return hostact.Unknown("told to say unknown")
	case "panic":
		panic("told to panic")
	case "block":
		if entered != nil {
			entered <- struct{}{}
		}
		<-gate
	}
	if value != nil {
		return hostact.Value(*value)
	}
	return hostact.Value(call.Argument)
}

// harness is one home: a real bbolt store, a vault, and an engine of
// one boot.
type harness struct {
	t testing.TB
	// fatalf reports a failure (t.Fatalf, or a property test's).
	fatalf func(format string, args ...any)
	home   string
	// noSync opens the store without fsync (property tests only).
	noSync bool
	// reservation is the engines' ReservationSteps (0: the default).
	reservation uint64
	// unbatched: the engines write without the group commit.
	unbatched bool
	// maxParked is the engines' MaxParked (0: the default).
	maxParked int
	st        *bolt.Store
	acts      *hostact.Registry
	count     *counter
	host      atomic.Int64 // calls of the host act
	emitter   *hostact.Emitter
	e         *Engine
	boots     int
}

func newHarness(t testing.TB) *harness { return newHarnessSync(t, true) }

// newHarnessSync makes a harness whose store syncs its commits or not.
func newHarnessSync(t testing.TB, sync bool) *harness {
	t.Helper()
	h := &harness{t: t, fatalf: t.Fatalf, home: t.TempDir(), count: &counter{}, noSync: !sync}
	h.acts = hostact.NewRegistry()
	h.must(h.acts.Register("host", tagHost, func(ctx context.Context, c hostact.Call) hostact.Result {
		h.host.Add(1)
		return hostact.Host(ctx, c)
	}))
	h.must(h.acts.Register("count", tagCount, h.count.fn))
	em, err := hostact.OpenEmitter(hostact.EffectsDir(h.home))
	h.must(err)
	t.Cleanup(func() { em.Close() })
	h.emitter = em
	h.must(h.acts.Register("emit", hostact.TagEmit, em.Emit))
	h.open()
	_, _, err = h.e.InitNeuron(context.Background(), "testnet")
	h.must(err)
	return h
}

func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.fatalf("%v", err)
	}
}

// open opens the store and an engine with a new boot.
func (h *harness) open() {
	h.t.Helper()
	st, err := bolt.OpenWith(h.home+"/store", bolt.Options{LockWait: time.Second, NoSync: h.noSync})
	h.must(err)
	h.st = st
	h.boots++
	h.e = h.engine(fmt.Sprintf("boot-%d", h.boots))
	h.t.Cleanup(func() { st.Close() })
}

// engine is another engine (another boot) on the same store.
func (h *harness) engine(boot string) *Engine {
	h.t.Helper()
	e, err := New(Config{Store: h.st.Fencing(), Trust: h.st.Trust(), Vault: neuron.OpenVault(neuron.VaultDir(h.home)), Acts: h.acts, Boot: boot,
		Version: "test", DeviceID: "test-device", ReservationSteps: h.reservation, Unbatched: h.unbatched, MaxParked: h.maxParked})
	h.must(err)
	h.t.Cleanup(e.Close)
	return e
}

// reopen is a restart: the store closed and opened again, a new boot.
func (h *harness) reopen() {
	h.t.Helper()
	h.must(h.st.Close())
	h.open()
}

var ctx = context.Background()

// grant replaces the grant with these acts.
func (h *harness) grant(acts ...uint64) *store.Grant {
	h.t.Helper()
	g, err := h.e.Grant(ctx)
	h.must(err)
	ng, err := h.e.SetGrant(ctx, g.Revision, GrantSpec{Acts: acts})
	h.must(err)
	return ng
}

func (h *harness) bind() *store.Root {
	h.t.Helper()
	r, err := h.e.BindBoot(ctx)
	h.must(err)
	return r
}

func parse(t testing.TB, src string) noun.Noun {
	t.Helper()
	n, err := noun.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// callOnInput is a program that calls act tag on its first input and
// returns 0 + the witness: "let x = act(input); mem + x" with mem 0.
func callOnInput(tag uint64) string {
	return fmt.Sprintf("[5 [[1 0] [2 [[0 2] [1 [16 [[1 %d] [1 0]]]]]]]]", tag)
}

// callTwice calls act tag twice on the subject and returns both witnesses.
func callTwice(tag uint64) string {
	c := fmt.Sprintf("[16 [[1 %d] [1 0]]]", tag)
	return "[3 [" + c + " " + c + "]]"
}

func (h *harness) install(src string, acts ...uint64) *store.Prog {
	h.t.Helper()
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(h.t, src), Acts: acts, StepLimit: 10000})
	h.must(err)
	return p
}

func (h *harness) invoke(p *store.Prog, inputs ...uint64) *store.Invocation {
	h.t.Helper()
	inv, err := h.e.Invoke(ctx, p.ID, inputs)
	h.must(err)
	return inv
}

// awaiting drives an invocation to its next proposed operation.
func (h *harness) awaiting(inv *store.Invocation) *store.Operation {
	h.t.Helper()
	got, err := h.e.Advance(ctx, inv.ID)
	h.must(err)
	if got.Pending == "" {
		h.fatalf("invocation %s is %s with nothing pending", got.ID, got.Status)
	}
	v, err := h.e.Operation(ctx, got.Pending)
	h.must(err)
	return v.Operation
}

func (h *harness) view(inv string) *InvocationView {
	h.t.Helper()
	v, err := h.e.Invocation(ctx, inv)
	h.must(err)
	return v
}

func wantRefusal(t testing.TB, what string, err error, r Refusal) {
	t.Helper()
	e, ok := AsRefusal(err)
	if !ok || e.Refusal != r {
		t.Fatalf("%s: %v, want refusal %s", what, err, r)
	}
}

func wantCalls(t testing.TB, what string, c *counter, n int64) {
	t.Helper()
	if got := c.calls.Load(); got != n {
		t.Fatalf("%s: the act ran %d times, want %d", what, got, n)
	}
}

// claimOf reads the claim of an attempt (nil if none).
func (h *harness) claimOf(op string, n uint32) *store.Claim {
	h.t.Helper()
	var c *store.Claim
	err := h.st.Local().View(ctx, func(tx store.LocalTx) error {
		var err error
		c, err = tx.Claim(op, n)
		if errors.Is(err, store.ErrNotFound) {
			c, err = nil, nil
		}
		return err
	})
	h.must(err)
	return c
}

func atomOf(t testing.TB, b []byte) uint64 {
	t.Helper()
	n, err := store.DecodeNoun(b)
	if err != nil || !n.IsAtom() {
		t.Fatalf("not an atom: %v %v", n, err)
	}
	return n.Value()
}

// rewriteOperation closes the store, changes a stored operation's
// argument as a writer of the file would (the record sealed again; with
// tagged, its authentication tag made again with the vault's key, as
// only the vault's holder can), and opens it again with a new engine of
// the same boot.
func (h *harness) rewriteOperation(id string, arg []byte, tagged bool) {
	h.t.Helper()
	boot := h.e.Boot()
	h.must(h.st.Close())
	var rk *neuron.RecordKey
	if tagged {
		k, err := neuron.OpenVault(neuron.VaultDir(h.home)).Load()
		h.must(err)
		rk = k.RecordKey()
	}
	h.must(rewriteRecord(h.home+"/store/"+bolt.FileName, "operations", []byte(id), rk, func(p []byte) ([]byte, error) {
		var op map[string]any
		if err := json.Unmarshal(p, &op); err != nil {
			return nil, err
		}
		op["argument"] = arg
		return json.Marshal(op)
	}))
	st, err := bolt.Open(h.home+"/store", time.Second)
	h.must(err)
	h.st = st
	h.t.Cleanup(func() { st.Close() })
	h.e = h.engine(boot)
}
