package fencing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Defaults of Config.
const (
	DefaultMaxArgumentBytes = 64 << 10
	// DefaultMaxCells bounds the pairs one run of a prog holds: those
	// reachable from its live values at the machine's census (pairs it
	// built and dropped do not count: the collector frees them) and
	// those of the witnesses it is given. A pair is an 80-byte cell, so
	// this is 160 MiB of nox data per run.
	DefaultMaxCells = 1 << 21
	// DefaultMaxRuns is how many runs of progs the VM holds at once: runs
	// are CPU-bound, so more than the cores gain nothing, and the bound
	// times MaxCells is all the nox data the supervisor holds.
	DefaultMaxRuns = 2
	// DefaultMaxParked is how many runs stopped at an act (or between
	// slices) are kept in memory to go on with, and DefaultParkedCells
	// how many pairs they hold together (docs/fencing.md, "Steps"): a
	// stopped run's goroutine holds its stack (at most DepthLimit
	// levels) and its pairs. The daemon drives 32 invocations at once.
	DefaultMaxParked = 64
	// DepthLimit is a run's recursion depth (the reference's 1,000):
	// deeper is nox's Malformed, well before the Go stack grows past a
	// few MiB.
	DepthLimit = reduce.DefaultDepthLimit
	// EmbeddedWorkerID names the supervisor's own host-act worker.
	EmbeddedWorkerID = "embedded-host-act"
	// DefaultActGrace is how long a claimed act may go on after the
	// drive that called it was cancelled (the supervisor's shutdown
	// grace).
	DefaultActGrace = 5 * time.Second
)

// Config of an engine.
type Config struct {
	// Store is the home's store, owned exclusively by this process.
	Store store.Fencing
	// Trust is the trust Store checks signed records with (the one it
	// was opened with, Bolt.Trust): the engine sets the vault's key on it
	// and checks the records it signs against it before writing them.
	Trust *store.Trust
	// Vault holds (or will hold, after InitNeuron) the neuron's key.
	Vault *neuron.Vault
	// Acts are the registered host acts.
	Acts *hostact.Registry
	// Boot identifies this process incarnation; the embedded worker is
	// bound with it.
	Boot string
	// Version is the supervisor's version, in the worker descriptor.
	Version string
	// DeviceID is the machine's id (fencing evidence only).
	DeviceID string
	// MaxArgumentBytes bounds an act's argument (its canonical
	// encoding); default 64 KiB, at most 8 MiB.
	MaxArgumentBytes uint64
	// ReservationSteps, if set, caps what one slice reserves: a run
	// that uses it stops and the next slice replays it from the start.
	// 0 (the default) reserves all the invocation's remaining steps, so
	// a slice runs up to the next act or the end with one reservation.
	ReservationSteps uint64
	// MaxCells bounds the pairs one run may hold or be given as
	// witnesses (default DefaultMaxCells); more is memory_exhausted.
	MaxCells uint64
	// MaxRuns bounds the runs of progs held at once (default
	// DefaultMaxRuns); a slice waits for its turn.
	MaxRuns int
	// MaxParked bounds the runs kept stopped between their slices
	// (default DefaultMaxParked), and ParkedCells the pairs they hold
	// together (default MaxCells). A run that does not fit keeps its
	// place among MaxRuns while its drive goes on, and is dropped when
	// the drive ends; then its invocation's next slice replays.
	MaxParked   int
	ParkedCells uint64
	// ActGrace is how long an act's context outlives the cancellation
	// of the dispatch that called it (default DefaultActGrace): a
	// shutdown lets a claimed act finish rather than fail it.
	ActGrace time.Duration
	// Unbatched writes every transaction on its own instead of through
	// the store's group commit (benchmarks compare the two).
	Unbatched bool
	Logger    *slog.Logger
	// Now is the clock (UTC); tests set it.
	Now func() time.Time
}

// ErrConfig is wrapped by configuration errors.
var ErrConfig = errors.New("invalid fencing configuration")

// Engine is the dispatch engine of one home.
type Engine struct {
	cfg   Config
	st    store.Fencing
	trust *store.Trust
	log   *slog.Logger
	acts  *hostact.Registry
	vault *neuron.Vault

	keyMu sync.RWMutex
	key   *neuron.Key

	// guard is the ward guard: a dispatch holds it for reading from its
	// final check through the claim's commit and the act call; changing
	// the grant, the policy or the placement holds it for writing.
	guard sync.RWMutex

	invMu sync.Mutex
	invs  map[string]*invLock

	// runs holds a token per run of a prog in the VM (MaxRuns).
	runs  chan struct{}
	stats runStats
	// lot keeps the runs stopped between their slices (park.go).
	lot parking
}

// New makes an engine. If the vault holds a key, it is loaded and the
// store is told to trust it; otherwise the neuron is not initialised yet
// and only InitNeuron and reads work.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil || cfg.Trust == nil || cfg.Vault == nil || cfg.Acts == nil {
		return nil, fmt.Errorf("%w: store, trust, vault and acts are required", ErrConfig)
	}
	if !protocol.ValidText(cfg.Boot) {
		return nil, fmt.Errorf("%w: boot id must be 1-128 printable ASCII", ErrConfig)
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.DeviceID == "" {
		cfg.DeviceID = "unknown-device"
	}
	for _, v := range []string{cfg.Version, cfg.DeviceID} {
		if !protocol.ValidText(v) {
			return nil, fmt.Errorf("%w: version and device id must be 1-128 printable ASCII", ErrConfig)
		}
	}
	switch {
	case cfg.MaxArgumentBytes == 0:
		cfg.MaxArgumentBytes = DefaultMaxArgumentBytes
	case cfg.MaxArgumentBytes > protocol.MaxArgumentBytesLimit:
		return nil, fmt.Errorf("%w: max argument bytes above %d", ErrConfig, protocol.MaxArgumentBytesLimit)
	}
	if cfg.ReservationSteps == 0 {
		cfg.ReservationSteps = ^uint64(0)
	}
	if cfg.MaxCells == 0 {
		cfg.MaxCells = DefaultMaxCells
	}
	switch {
	case cfg.MaxRuns == 0:
		cfg.MaxRuns = DefaultMaxRuns
	case cfg.MaxRuns < 0:
		return nil, fmt.Errorf("%w: max runs must be at least 1", ErrConfig)
	}
	switch {
	case cfg.MaxParked == 0:
		cfg.MaxParked = DefaultMaxParked
	case cfg.MaxParked < 0:
		return nil, fmt.Errorf("%w: max parked runs must be at least 1", ErrConfig)
	}
	if cfg.ParkedCells == 0 {
		cfg.ParkedCells = cfg.MaxCells
	}
	switch {
	case cfg.ActGrace == 0:
		cfg.ActGrace = DefaultActGrace
	case cfg.ActGrace < 0:
		return nil, fmt.Errorf("%w: act grace must not be negative", ErrConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	e := &Engine{cfg: cfg, st: cfg.Store, trust: cfg.Trust, log: cfg.Logger, acts: cfg.Acts, vault: cfg.Vault, invs: map[string]*invLock{},
		runs: make(chan struct{}, cfg.MaxRuns)}
	e.lot = parking{runs: map[string]*liveRun{}, idle: map[*liveRun]uint64{}, replayed: map[string]bool{},
		maxRuns: cfg.MaxParked, maxCells: cfg.ParkedCells}
	if cfg.Vault.HasKey() {
		k, err := cfg.Vault.Load()
		if err != nil {
			return nil, err
		}
		if err := cfg.Trust.SetSigner(k); err != nil {
			return nil, fmt.Errorf("trust the vault's key: %w", err)
		}
		e.key = k
		if err := e.authenticateRecords(context.Background()); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *Engine) now() time.Time { return e.cfg.Now() }

// Boot of this engine's process.
func (e *Engine) Boot() string { return e.cfg.Boot }

// Acts is the act registry.
func (e *Engine) Acts() *hostact.Registry { return e.acts }

// signer is the neuron key, or Missing before neuron init.
func (e *Engine) signer() (*neuron.Key, error) {
	e.keyMu.RLock()
	defer e.keyMu.RUnlock()
	if e.key == nil {
		return nil, noNeuron()
	}
	return e.key, nil
}

func (e *Engine) sign(st *neuron.Statement) (store.Hex, error) {
	k, err := e.signer()
	if err != nil {
		return nil, err
	}
	return k.Sign(st)
}

// Descriptor is this engine's embedded host-act worker on network.
func (e *Engine) Descriptor(network string) protocol.WorkerDescriptor {
	return protocol.WorkerDescriptor{
		Machine: protocol.MachineNativeGo, Environment: protocol.EnvHostAct, ProofProfile: protocol.ProfileNone,
		Network: network,
		Executor: protocol.Executor{
			Warrior: protocol.WarriorCyberSupervisor, Version: e.cfg.Version, Backend: protocol.BackendEmbeddedSync,
			WorkerID: EmbeddedWorkerID, DeviceID: e.cfg.DeviceID, BootID: e.cfg.Boot,
		},
		MaxArgumentBytes: e.cfg.MaxArgumentBytes,
		Acts:             e.acts.Tags(),
	}
}

// supported reports whether a descriptor is one this engine can place:
// exactly the embedded host-act worker's five selections and backend.
func supported(d protocol.WorkerDescriptor) error {
	if d.Machine != protocol.MachineNativeGo || d.Environment != protocol.EnvHostAct || d.ProofProfile != protocol.ProfileNone {
		return refuse(Unsupported, "machine %q, environment %q, proof %q: this host runs %s / %s / %s only",
			d.Machine, d.Environment, d.ProofProfile, protocol.MachineNativeGo, protocol.EnvHostAct, protocol.ProfileNone)
	}
	if d.Executor.Warrior != protocol.WarriorCyberSupervisor || d.Executor.Backend != protocol.BackendEmbeddedSync {
		return refuse(Unsupported, "warrior %q, backend %q: this host runs %s on %s only",
			d.Executor.Warrior, d.Executor.Backend, protocol.WarriorCyberSupervisor, protocol.BackendEmbeddedSync)
	}
	if err := d.Validate(); err != nil {
		return refuse(Unsupported, "%s", protocol.AsError(err).Message)
	}
	return nil
}

// invLock serialises what this process does to one invocation (driving
// it, cancelling it, rebinding it): the store decides races between
// processes or against a dispatch, this only keeps one process from
// racing itself.
type invLock struct {
	mu   sync.Mutex
	refs int
}

func (e *Engine) lockInvocation(id string) func() {
	e.invMu.Lock()
	l := e.invs[id]
	if l == nil {
		l = &invLock{}
		e.invs[id] = l
	}
	l.refs++
	e.invMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		e.invMu.Lock()
		if l.refs--; l.refs == 0 {
			delete(e.invs, id)
		}
		e.invMu.Unlock()
	}
}

// view and write wrap the store; write is the group commit.
func (e *Engine) view(ctx context.Context, fn func(store.FencingTx) error) error {
	return e.st.View(ctx, fn)
}

func (e *Engine) write(ctx context.Context, fn func(store.FencingTx) error) error {
	if e.cfg.Unbatched {
		return e.st.Update(ctx, fn)
	}
	return e.st.Batch(ctx, fn)
}

// storeError turns a store refusal into the engine's: a broken rule of a
// record is a conflict, a missing record missing, a tampered one an
// internal error that says so.
func storeError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := AsRefusal(err); ok {
		return err
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return err
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &Error{Refusal: Missing, Message: err.Error()}
	case errors.Is(err, store.ErrSubject):
		return &Error{Refusal: Denied, Message: "the vault's key is not this home's neuron: " + err.Error()}
	case errors.Is(err, store.ErrClaimed):
		return &Error{Refusal: UnknownOutcome, Message: err.Error()}
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrInvariant):
		return &Error{Refusal: Conflict, Message: err.Error()}
	case errors.Is(err, store.ErrTampered), errors.Is(err, store.ErrUntrusted):
		return protocol.Errorf(protocol.CodeInternalError, "the store refused a record: %v", err)
	}
	return err
}
