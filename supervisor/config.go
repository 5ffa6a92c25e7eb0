package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// EnvHome names the supervisor's home when --home is not given.
const EnvHome = "CYBER_SUPERVISOR_HOME"

// Config of a supervisor.
type Config struct {
	// Home holds the store, the sandboxes and the socket.
	Home string
	// Slots is how many attempts run at once (default: the cores).
	Slots int
	// QueueLimit bounds queued jobs; submissions beyond it are refused
	// as busy (default 1024).
	QueueLimit int
	// Launcher starts workers. The supervisor owns it: Close closes it.
	Launcher launch.Launcher
	// NewLauncher, when Launcher is nil, makes the launcher once the
	// store has opened cleanly: a launcher creates cgroups and socket
	// directories and starts a worker to describe it, none of which may
	// happen on a home whose store is damaged or owned by another
	// supervisor.
	NewLauncher func(context.Context) (launch.Launcher, error)
	// CancelGrace is the bounded completion deadline after a cancel is
	// acknowledged; then the attempt's cgroup is killed (default 2 s).
	CancelGrace time.Duration
	// AckWait is how long Cancel waits for the worker's acknowledgement
	// before it returns (default 100 ms); the cancellation goes on.
	AckWait time.Duration
	// ShutdownGrace bounds how long Close lets running attempts finish
	// after cancelling them (default 5 s).
	ShutdownGrace time.Duration
	// Limits are the operator's default and maximal job limits (zero
	// fields: the built-ins, see OperatorLimits).
	Limits OperatorLimits
	// OneShot: the supervisor runs one job and closes (cyber-supervisor
	// run). It alone writes its home, so the attempt's running step is
	// recorded with its end too, as every supervisor records produced and
	// verified (steps.go); what is durable before dispatch (the job and
	// its prepared attempt) is the same.
	OneShot bool
	// DefaultRetries is how many times a job whose submission sets no
	// max_attempts (or sets 0) is retried after a retryable failure
	// (default 0: one attempt). An attempt the supervisor's own shutdown
	// interrupts is retried whatever the policy (store.Job.Interrupted).
	DefaultRetries uint32
	// Retain, when set, removes ended jobs (never unknown ones) this long
	// after they ended, keeping their tombstones (see GC).
	Retain time.Duration
	// VerifyMemoryBytes bounds the supervisor's own verification of a
	// certificate whose job sets no memory limit: what it may decompress
	// to and its node table (default DefaultVerifyMemoryBytes). A job's
	// memory limit bounds its verification instead.
	VerifyMemoryBytes uint64
	// Acts are the host acts nox progs may call; nil: the built-ins emit
	// (writing <home>/effects/emit.jsonl) and host.
	Acts *hostact.Registry
	// Version is this supervisor's version, in worker descriptors.
	Version string
	// InvocationWorkers bounds how many invocations are driven at once
	// (default 32).
	InvocationWorkers int
	Logger            *slog.Logger
	// Store, when set, is the job store instead of the home's own file:
	// the supervisor owns it (Close closes it). A store.Cluster (etcd) is
	// shared with other hosts (docs/cluster.md).
	Store store.Store
	// Trust is the neuron key the home's stores check signed records
	// against: the home's own file is opened with it, and a shared Store
	// must have been opened with the same (etcdstore.Config.Trust), which
	// checks the job claims this host signs. Nil: a new one, for a home
	// without a shared Store.
	Trust *store.Trust
	// HostID names this host on its attempts and in a cluster (default:
	// DefaultHostID of the home).
	HostID string
	// KeepLocalJobs lets a supervisor serve on a shared Store although
	// the home's own store holds jobs (otherwise Open refuses,
	// ErrLocalJobs): they stay there, untouched, until the home serves on
	// its own store again (homejobs.go).
	KeepLocalJobs bool
	// ReadTimeout bounds each read a client's request makes of a shared
	// store (default DefaultReadTimeout): an etcd that does not answer
	// within it is store.ErrUnavailable, answered busy (reads.go).
	ReadTimeout time.Duration
}

// DefaultVerifyMemoryBytes is Config.VerifyMemoryBytes when unset.
const DefaultVerifyMemoryBytes = 1 << 30

// The bounds of a stop (Close): running attempts are interrupted, get
// ShutdownGrace and CancelGrace to end, and are then killed, each kill
// bounded by KillBound.
const (
	DefaultCancelGrace   = 2 * time.Second
	DefaultShutdownGrace = 5 * time.Second
	KillBound            = 10 * time.Second
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid supervisor configuration")

func (c Config) withDefaults() (Config, error) {
	if c.Home == "" {
		return c, fmt.Errorf("%w: no home directory", ErrConfig)
	}
	if (c.Launcher == nil) == (c.NewLauncher == nil) {
		return c, fmt.Errorf("%w: set one of Launcher and NewLauncher", ErrConfig)
	}
	if c.Slots <= 0 {
		c.Slots = runtime.NumCPU()
	}
	if c.QueueLimit <= 0 {
		c.QueueLimit = 1024
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = DefaultCancelGrace
	}
	if c.AckWait <= 0 {
		c.AckWait = 100 * time.Millisecond
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.VerifyMemoryBytes == 0 {
		c.VerifyMemoryBytes = DefaultVerifyMemoryBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.HostID == "" {
		c.HostID = DefaultHostID(c.Home)
	}
	if err := CheckHostID(c.HostID); err != nil {
		return c, err
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.InvocationWorkers <= 0 {
		c.InvocationWorkers = 32
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.DefaultRetries >= MaxAttemptsLimit {
		return c, fmt.Errorf("%w: default retries %d: at most %d", ErrConfig, c.DefaultRetries, MaxAttemptsLimit-1)
	}
	if c.Retain < 0 {
		return c, fmt.Errorf("%w: negative retention", ErrConfig)
	}
	var err error
	if c.Limits, err = c.Limits.withDefaults(c.Slots, HostMemory()); err != nil {
		return c, err
	}
	return c, nil
}

// ResolveHome picks the home: the flag, then $CYBER_SUPERVISOR_HOME, then
// a per-user default ($XDG_STATE_HOME/cyber-supervisor, else
// ~/.local/state/cyber-supervisor; /var/lib/cyber-supervisor for root).
func ResolveHome(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if env := os.Getenv(EnvHome); env != "" {
		return filepath.Abs(env)
	}
	if os.Geteuid() == 0 {
		return "/var/lib/cyber-supervisor", nil
	}
	if xdg := os.Getenv("XDG_STATE_HOME"); xdg != "" {
		return filepath.Join(xdg, "cyber-supervisor"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find a home for the supervisor: %w", err)
	}
	return filepath.Join(home, ".local", "state", "cyber-supervisor"), nil
}

// Paths inside the home.
func storeDir(home string) string { return filepath.Join(home, "store") }

// StoreDir is the home's store directory.
func StoreDir(home string) string { return storeDir(home) }

// StorePath is the store file of a home.
func StorePath(home string) string { return filepath.Join(storeDir(home), bolt.FileName) }

// SandboxDir holds the attempts' sandboxes: <home>/sandboxes/<job>/<attempt>.
func SandboxDir(home string) string { return filepath.Join(home, "sandboxes") }

// SocketPath is where the daemon listens.
func SocketPath(home string) string { return filepath.Join(home, "supervisor.sock") }
