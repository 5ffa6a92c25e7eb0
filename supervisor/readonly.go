package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// ReadOnlyConfig is what OpenReadOnly needs of a home no daemon owns.
type ReadOnlyConfig struct {
	Home   string
	Logger *slog.Logger
	// LockWait is how long the open waits for the store's shared lock
	// (default 100 ms): a daemon holds it exclusively, and then the open
	// is ErrLocked (ask the daemon instead).
	LockWait time.Duration
	// Capabilities are what this host would enforce (a launcher's
	// declaration, made by the caller when it wants them answered); the
	// zero value answers that nothing is enforced or offered.
	Capabilities launch.Capabilities
	// Limits are the operator limits to report (defaults filled in as a
	// daemon's are).
	Limits OperatorLimits
	// Version is this build's version, for the fencing engine's records
	// (it writes none here).
	Version string
}

// OpenReadOnly opens a home no daemon owns for reading, as a daemon's
// API reads it: jobs, attempts, events and the fencing records (checked
// with the neuron's key from the home's vault, as a daemon checks them).
// Nothing is recovered, launched, scheduled or written: the store is
// opened read-only under its shared lock, a store that would need a
// migration is refused (store.ErrSchema), and a store a daemon owns is
// never opened (store.ErrLocked). Hold it only as long as a read takes
// and Close it: a daemon that starts meanwhile waits for the lock.
func OpenReadOnly(ctx context.Context, cfg ReadOnlyConfig) (*Supervisor, error) {
	if cfg.Home == "" {
		return nil, fmt.Errorf("%w: no home directory", ErrConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LockWait <= 0 {
		cfg.LockWait = 100 * time.Millisecond
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	limits, err := cfg.Limits.withDefaults(1, HostMemory())
	if err != nil {
		return nil, err
	}
	trust := store.NewTrust()
	homeFile, err := bolt.OpenReadOnlyWith(StorePath(cfg.Home), cfg.LockWait, trust)
	if err != nil {
		return nil, err
	}
	metrics, closed := newMetrics(), make(chan struct{})
	home := newHomeStore(homeFile, false, newIOGuard(cfg.Logger, metrics, closed))
	s := &Supervisor{
		cfg: Config{Home: cfg.Home, Logger: cfg.Logger, Limits: limits, Slots: 1, Version: cfg.Version, ReadTimeout: DefaultReadTimeout},
		log: cfg.Logger, store: &guardedStore{Store: homeFile, ioGuard: home.guard}, home: home,
		id:      identity{host: DefaultHostID(cfg.Home)},
		metrics: metrics, active: map[string]*active{}, frozen: newFrozenSpecs(1), closed: closed,
		wake: make(chan struct{}, 1), stopped: make(chan struct{}), gcTurn: make(chan struct{}, 1), drain: newDrainState(),
		offline: true, readOnly: true, launchCaps: cfg.Capabilities, caps: cfg.Capabilities.Worker,
	}
	vault := neuron.OpenVault(neuron.VaultDir(cfg.Home))
	if err := needsNoStart(ctx, home, vault, trust); err != nil {
		homeFile.Close()
		return nil, err
	}
	// The engine reads the fencing records; it loads the neuron's key
	// from the vault to check their tags, as a daemon's does. Its acts
	// are none: nothing is dispatched.
	e, err := fencing.New(fencing.Config{Store: home.fencing, Trust: trust, Vault: vault,
		Acts: hostact.NewRegistry(), Boot: "read-only-" + newBootID(), Version: cfg.Version, DeviceID: deviceID(), Logger: cfg.Logger})
	if err != nil {
		homeFile.Close()
		return nil, err
	}
	s.fence = e
	return s, nil
}

// ErrNeedsStart: the home needs what only a process that may write does
// before its fencing records can be read: a store of schema 6 whose
// records the neuron's key has not authenticated yet (the first start,
// or fencing command without a daemon, does it).
var ErrNeedsStart = errors.New("the home needs a start before it is read")

// needsNoStart refuses a home whose root predates authenticated records
// while the vault holds the key: the engine would authenticate them, a
// write.
func needsNoStart(ctx context.Context, home *homeStore, vault *neuron.Vault, trust *store.Trust) error {
	if !vault.HasKey() {
		return nil
	}
	// The root's signature is checked with the key, which the engine
	// sets as well (the same key again is no change).
	k, err := vault.Load()
	if err != nil {
		return err
	}
	if err := trust.SetSigner(k); err != nil {
		return fmt.Errorf("trust the vault's key: %w", err)
	}
	var root *store.Root
	err = home.fencing.View(ctx, func(tx store.FencingTx) (err error) { root, err = tx.Root(); return err })
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return nil // the engine's reads say what is wrong
	case root.Records == "":
		return fmt.Errorf("%w: the store's fencing records are of schema 6 and not authenticated yet: start the daemon once (cyber-supervisor serve), or run a fencing command without one (cyber-supervisor neuron show), which authenticates them", ErrNeedsStart)
	}
	return nil
}

// Unfenced says why a read-only supervisor's store is older than its
// home and not fenced yet (nil: it is not), as RestoreUnfenced does for
// a command that works on the home, but for the home's emit log, which
// only a start opens (opening it cuts a torn last line).
func (s *Supervisor) Unfenced(ctx context.Context) ([]string, error) {
	return RestoreUnfenced(ctx, s.cfg.Home, s.home.bolt, nil)
}
