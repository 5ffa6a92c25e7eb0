// Package supervisor runs nox jobs in isolated workers and decides what
// they produced: durable jobs and attempts, a slot scheduler, the
// cancellation protocol, restart recovery and the acceptance sequence with
// the supervisor's own verifier. It never runs untrusted code in-process.
package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/certstore"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// Supervisor owns one home: its store (exclusively), its sandboxes and the
// workers it launches.
type Supervisor struct {
	cfg       Config
	log       *slog.Logger
	store     store.Store
	sandboxes *artifacts.Root
	// certs holds the certificates of verify jobs by reference
	// (<home>/certificates).
	certs *certstore.Store
	// certsMu: gc removes a stored certificate only while no admission
	// of a job naming one is between its check and its store (certgc.go).
	certsMu sync.RWMutex
	caps    protocol.Capabilities // what this host enforces: launchCaps.Worker
	// launchCaps is what the launcher declared.
	launchCaps launch.Capabilities
	metrics    *Metrics
	changes    notifier
	frozen     *frozenSpecs

	mu      sync.Mutex
	active  map[string]*active // running attempts by job id
	closing bool
	closed  chan struct{} // closed by Close: store writes stop waiting for space
	wake    chan struct{}
	stop    context.CancelFunc
	// stopScheduler ends the scheduler alone (StopDispatching);
	// stopped is closed once it has returned.
	stopScheduler context.CancelFunc
	stopped       chan struct{}
	runs          sync.WaitGroup
	// teardowns are worker cleanups still running after their attempt
	// ended with a result.
	teardowns sync.WaitGroup
	// background is the retention loop.
	background sync.WaitGroup
	// gcTurn holds one collection at a time (GC): the retention loop and
	// any number of gc requests may ask at once.
	gcTurn chan struct{}
	// drain is the operator's drain (drain.go), under mu.
	drain drainState
	// broken takes the one error that leaves the started supervisor
	// unable to go on (Broken).
	broken  chan error
	hooks   testHooks
	started bool
	offline bool // OpenOffline: no launcher, never started
	// readOnly: OpenReadOnly, offline on a read-only store without
	// sandboxes.
	readOnly bool
	// bootPending: this boot is recorded in the store with its first
	// submission (one-shot, nothing to recover; recover.go). Concurrent
	// submissions read it in their transactions while the first one's
	// clears it after its own: atomic, and the transaction checks the
	// store's meta so that only one of them counts the boot.
	bootPending atomic.Bool
	slotsSem    chan struct{} // one token per running attempt
	// own are the jobs submitted to a one-shot supervisor, the only ones
	// it dispatches (scheduler.go).
	own map[string]bool

	// id is who prepares attempts: the host, this boot and its placement
	// generation (the cluster registration's revision; 0 on a local
	// store). The boot changes when a fenced boot joins again.
	id        identity
	startedAt time.Time
	// figures are the overview's numbers, kept as jobs move (nil on a
	// supervisor opened for maintenance or a one-shot run: its overview
	// scans).
	figures    *figures
	recounting atomic.Bool
	// pageScan replaces PageScanBudget when set (tests).
	pageScan int
	// cluster is the store when it is shared by several hosts (nil: the
	// local store); member is this boot's registration in it, isFenced
	// whether it was lost and not replaced yet (cluster.go).
	cluster  store.Cluster
	member   store.Membership
	isFenced bool
	// home is the home's own store: the job store's file on a local
	// home, beside a shared job store the neuron and the host acts only
	// (docs/cluster.md, "Host acts stay local").
	home *homeStore

	// fence is the dispatch engine of the home's neuron (docs/fencing.md);
	// emitter is the emit act's effect log when the built-ins are used.
	fence   *fencing.Engine
	emitter *hostact.Emitter
	drivers driverPool
}

// testHooks let tests observe internal moments without sleeping.
type testHooks struct {
	afterProduced func(job string, n uint32)
	// afterTake gets how long a take (prepareNext's transaction) took.
	afterTake func(time.Duration)
	// afterRunning runs once an attempt's running record committed,
	// before its worker is given the job.
	afterRunning func(job string, n uint32)
}

// Open takes the home's store (a second supervisor on the same home is
// refused), starts a new boot and recovers what the previous boot left:
// attempts it was running become unknown, jobs whose retry policy allows
// it are queued for a new attempt, leftover cgroups and sandboxes go. On
// a store shared by several hosts (Config.Store a store.Cluster) the boot
// joins the cluster first, and recovers the attempts of every boot that
// is no longer registered, this host's earlier ones among them.
func Open(ctx context.Context, cfg Config) (_ *Supervisor, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// What Open has opened is closed again, the last first, when a later
	// step fails: one path instead of a cleanup per return.
	var undo undoStack
	defer func() {
		if err != nil {
			undo.run()
		}
	}()
	// The shared store is the supervisor's from here (Close closes it).
	shared := cfg.Store != nil
	if shared {
		undo.push(func() { cfg.Store.Close() })
	}
	// The home's own store: the job store, or beside a shared one the
	// neuron and the host acts; its lock is the home's either way.
	made := cfg.Launcher == nil
	if cfg.Trust == nil {
		cfg.Trust = store.NewTrust()
	}
	homeFile, err := bolt.OpenWith(storeDir(cfg.Home), bolt.Options{LockWait: 100 * time.Millisecond, SyncFreelist: cfg.OneShot, Keys: cfg.Trust})
	if err != nil {
		if errors.Is(err, store.ErrCorrupt) {
			cfg.Logger.Error("the store is damaged; nothing was started", "err", err)
		}
		return nil, err
	}
	undo.push(func() { homeFile.Close() })
	var base store.Store = homeFile
	if shared {
		if err := guardLocalJobs(ctx, cfg, homeFile); err != nil {
			return nil, err
		}
		if err := markShared(cfg.Home); err != nil {
			return nil, err
		}
		base = cfg.Store
	}
	root, err := openSandboxes(cfg.Home)
	if err != nil {
		return nil, err
	}
	undo.push(func() { root.Close() })
	certs, err := certstore.Open(cfg.Home)
	if err != nil {
		return nil, err
	}
	undo.push(func() { certs.Close() })
	metrics, closed := newMetrics(), make(chan struct{})
	home := newHomeStore(homeFile, shared, newIOGuard(cfg.Logger, metrics, closed))
	st := &guardedStore{Store: base, ioGuard: home.guard}
	if !cfg.OneShot {
		// A one-shot run shows no overview: its start does not pay the
		// scan the figures begin with.
		st.figures = newFigures()
	}
	if shared {
		st.ioGuard = newIOGuard(cfg.Logger, metrics, closed)
	}
	// The launcher makes cgroups and sockets and may start a worker to
	// describe it: only once the store is open (its lock is ours and the
	// file is whole).
	if made {
		if cfg.Launcher, err = cfg.NewLauncher(ctx); err != nil {
			return nil, err
		}
		undo.push(func() { cfg.Launcher.Close() })
	}
	s := &Supervisor{
		cfg: cfg, log: cfg.Logger, store: st, sandboxes: root, certs: certs,
		id:        identity{host: cfg.HostID, boot: newBootID()},
		startedAt: time.Now().UTC(),
		metrics:   metrics, active: map[string]*active{}, closed: closed,
		wake: make(chan struct{}, 1), stopped: make(chan struct{}), broken: make(chan error, 1),
		gcTurn:     make(chan struct{}, 1),
		drain:      newDrainState(),
		slotsSem:   make(chan struct{}, cfg.Slots),
		frozen:     newFrozenSpecs(cfg.QueueLimit + cfg.Slots),
		home:       home,
		launchCaps: cfg.Launcher.Capabilities(),
		figures:    st.figures,
	}
	s.caps = s.launchCaps.Worker
	s.metrics.setHost(s.id.host, s.id.boot, 0)
	if c, ok := base.(store.Cluster); ok {
		s.cluster = c
		if err := s.join(ctx); err != nil {
			return nil, err
		}
		undo.push(func() { s.member.Leave(context.WithoutCancel(ctx)) })
	}
	// openFencing may have opened the emitter before it failed.
	undo.push(func() {
		if s.emitter != nil {
			s.emitter.Close()
		}
	})
	if err := s.openFencing(); err != nil {
		return nil, err
	}
	undo.push(s.fence.Close)
	rec, err := s.recover(clientWrite(ctx))
	if err != nil {
		return nil, err
	}
	s.log.Info("recovered the previous boot", "host", s.id.host, "boot", s.id.boot, "generation", s.id.gen, "boots", rec.Boots,
		"unknown_attempts", rec.UnknownAttempts, "requeued", rec.Requeued, "ended_unknown", rec.EndedUnknown,
		"cancelled", rec.Cancelled, "still_queued", rec.Queued, "leftovers_removed", rec.Leftovers, "sandboxes_removed", rec.Sandboxes,
		"sandboxes_of_unknown_jobs_kept", rec.ForeignSandboxes)
	// The overview's figures start from one scan of what recovery left;
	// from here every write moves them.
	if err := s.recount(ctx); err != nil {
		return nil, err
	}
	s.bindBoot(ctx)
	return s, nil
}

// OpenOffline opens a home's store and sandboxes for maintenance (gc)
// while no daemon runs: no boot starts, nothing is recovered, launched or
// dispatched (Start does nothing), and Close closes the two. A running
// supervisor owns the store: then it is ErrLocked.
func OpenOffline(ctx context.Context, home string, log *slog.Logger) (*Supervisor, error) {
	if home == "" {
		return nil, fmt.Errorf("%w: no home directory", ErrConfig)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Maintenance makes no home: a mistyped --home is ErrNoStore, not a
	// new, empty store to find nothing in.
	if err := bolt.Exists(filepath.Join(storeDir(home), bolt.FileName)); err != nil {
		return nil, err
	}
	homeFile, err := bolt.Open(storeDir(home), 100*time.Millisecond)
	if err != nil {
		return nil, err
	}
	root, err := openSandboxes(home)
	if err != nil {
		homeFile.Close()
		return nil, err
	}
	certs, err := certstore.Open(home)
	if err != nil {
		root.Close()
		homeFile.Close()
		return nil, err
	}
	metrics, closed := newMetrics(), make(chan struct{})
	own := newHomeStore(homeFile, false, newIOGuard(log, metrics, closed))
	st := &guardedStore{Store: homeFile, ioGuard: own.guard}
	return &Supervisor{cfg: Config{Home: home, Logger: log}, log: log, store: st, home: own, sandboxes: root, certs: certs,
		metrics: metrics, active: map[string]*active{}, frozen: newFrozenSpecs(1), closed: closed,
		wake: make(chan struct{}, 1), stopped: make(chan struct{}), gcTurn: make(chan struct{}, 1), drain: newDrainState(), offline: true}, nil
}

func newBootID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the platform is broken
	}
	return hex.EncodeToString(b[:])
}

// Boot is this incarnation's id.
func (s *Supervisor) Boot() string { return s.ident().boot }

// HostID is the host's id: its name in a cluster, and on its attempts.
func (s *Supervisor) HostID() string { return s.id.host }

// Generation is the boot's placement generation (0 on a local store).
func (s *Supervisor) Generation() uint64 { return s.ident().gen }

// Capabilities are what this host enforces.
func (s *Supervisor) Capabilities() protocol.Capabilities { return s.caps }

// Host is what the launcher found on this host (the limits probe and how
// workers are launched), or nil when it cannot say.
func (s *Supervisor) Host() *launch.HostReport { return s.launchCaps.Host }

// Store exposes the durable state (read access for tools and tests).
func (s *Supervisor) Store() store.Store { return s.store }

// Prewarm asks the launcher to start its warm workers now, when it keeps
// any (one job: the worker it will run in, started while the job is
// recorded).
func (s *Supervisor) Prewarm() {
	if s.launchCaps.Warm {
		if err := s.cfg.Launcher.Prewarm(); err != nil {
			s.log.Warn("prewarm workers", "err", err)
		}
	}
}

// Broken delivers, once, an error after which the started supervisor
// does nothing useful until it is closed: on a shared store, a boot that
// was fenced and cannot join again (another home registered the host id
// meanwhile, ErrHostInUse). A daemon stops on it, so that its service
// manager sees the failure rather than a daemon that serves and never
// dispatches.
func (s *Supervisor) Broken() <-chan error { return s.broken }

// Start runs the scheduler until Close.
func (s *Supervisor) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.offline {
		return
	}
	s.started = true
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	sctx, stopScheduler := context.WithCancel(ctx)
	s.stopScheduler = stopScheduler
	go s.schedule(sctx)
	if s.cluster != nil {
		s.background.Add(1)
		go func() { defer s.background.Done(); s.runCluster(ctx) }()
	}
	s.drivers.start(s)
	if s.cfg.Retain > 0 {
		s.background.Add(1)
		go func() {
			defer s.background.Done()
			s.retain(ctx)
		}()
	}
	s.kick()
}

// StopDispatching stops the scheduler: once it returns, no attempt is
// prepared any more (one being prepared as it is called may still be
// dispatched, and is interrupted by Close like any other). Attempts that
// run go on; jobs stay queued for the next start. A daemon calls it as
// soon as it is asked to stop, before its API drains: an attempt
// dispatched then would be interrupted at once, at the cost of one of its
// job's attempts. Close does it too.
func (s *Supervisor) StopDispatching() {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		s.stopScheduler()
		<-s.stopped
	}
}

// Close stops admitting, cancels running attempts, lets them finish within
// the shutdown grace (then kills them), and closes the store.
func (s *Supervisor) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	close(s.closed)
	started := s.started
	s.mu.Unlock()
	if started {
		s.stop()
		<-s.stopped
		s.background.Wait()
	}
	// Taken once the scheduler has returned: an attempt it prepared as
	// Close began is among them (register interrupts one that comes
	// later still, a one-shot Submit's).
	for _, a := range s.activeAttempts() {
		a.requestCancel(shutdownReason, true)
	}
	done := make(chan struct{})
	go func() { s.runs.Wait(); close(done) }()
	grace := time.NewTimer(s.cfg.ShutdownGrace + s.cfg.CancelGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
	case <-ctx.Done():
	}
	for _, a := range s.activeAttempts() {
		a.kill() // those still running: past the grace, or ctx ended
	}
	<-done
	s.teardowns.Wait()
	s.drivers.stop()
	if s.fence != nil {
		// The runs kept between slices end with the daemon; the next
		// boot replays them.
		s.fence.Close()
	}
	var emitErr error
	if s.emitter != nil {
		emitErr = s.emitter.Close()
	}
	if s.readOnly {
		return s.store.Close()
	}
	if s.offline {
		return errors.Join(s.store.Close(), s.sandboxes.Close(), s.certs.Close(), emitErr)
	}
	var leaveErr error
	if m := s.membership(); m != nil {
		// The attempts have ended and are recorded: the registration
		// goes, and with it this boot's place in the cluster.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		leaveErr = m.Leave(lctx)
		cancel()
	}
	var localErr error
	if s.home.shared {
		localErr = s.home.bolt.Close()
	}
	return errors.Join(leaveErr, s.store.Close(), localErr, s.sandboxes.Close(), s.certs.Close(), s.cfg.Launcher.Close(), emitErr)
}

func (s *Supervisor) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Supervisor) now() time.Time { return time.Now().UTC() }
