package supervisor

import (
	"context"
	"errors"
	"time"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/pluginclient"
)

// Launcher starts workers. The real one (NewLauncher) puts each worker in
// its own cgroups and namespaces through sandbox/ and limits/ and speaks
// go-plugin to it; the supervisor only decides policy.
type Launcher interface {
	// Capabilities is what this host and worker together enforce: jobs
	// asking for anything else are refused before dispatch.
	Capabilities() protocol.Capabilities
	// Launch starts the worker of one attempt. The worker has run no code
	// before its limits applied.
	Launch(ctx context.Context, req LaunchRequest) (Worker, error)
	// RemoveLeftovers kills and removes what workers of earlier boots left
	// (cgroups, processes, sockets) and names what it removed.
	RemoveLeftovers(ctx context.Context) ([]string, error)
	Close() error
}

// LaunchRequest is what a launch needs to know about an attempt.
type LaunchRequest struct {
	Job     string
	Attempt uint32
	Limits  protocol.Limits
	// WorkDir is the attempt's sandbox directory on the host: the
	// worker's work dir when it runs unisolated. A launcher whose
	// workers get a work dir of their own (a jailed worker's tmpfs) says
	// so with OwnsWorkDirs() bool; it then gets "", and the sandbox is
	// made only when something is kept in it.
	WorkDir string
}

// Worker is one running worker process (tree).
type Worker interface {
	// Client speaks the worker protocol.
	Client() *pluginclient.Client
	// WorkDir is the attempt directory as the worker sees it.
	WorkDir() string
	// Files is the worker's work dir as the host sees it when that is not
	// the attempt's sandbox dir (a jailed worker's tmpfs), nil otherwise.
	// The caller closes it.
	Files() (*artifacts.Dir, error)
	// WorkDirFull reports whether the worker reached its work dir's size
	// or file bound, and the bound in bytes: such an attempt is
	// artifact_too_large, whatever the worker reported.
	WorkDirFull() (full bool, bound int64)
	// Kill ends the whole tree (the cgroup kill) and waits until it is
	// gone. Idempotent.
	Kill(ctx context.Context) error
	// Close kills what is left, reaps, reads the cgroup's verdict and
	// removes the cgroups. Call it exactly once.
	Close(ctx context.Context) (Exit, error)
	// Usage is the attempt's memory high-water mark and CPU time so far
	// (zero what the host cannot tell): read when the result is in hand
	// and the teardown is left to run in the background.
	Usage() Usage
}

// Usage is what an attempt's worker used.
type Usage struct {
	PeakMemory uint64
	// CPUTime is user and system time, from the cgroup (or, without
	// cgroups, from the worker process).
	CPUTime time.Duration
}

// Exit is what the host learned about a worker after it was reaped.
type Exit struct {
	// OOMKilled comes from the cgroup's oom_kill counter, never from the
	// exit status.
	OOMKilled bool
	Usage
}

// ErrIsolationUnavailable: IsolationRequired on a host that cannot give
// it (not root, no namespaces, or no cgroup memory limit and tree kill).
// The host decides, not the job: the same command fails the same way
// until the host changes, so it is not retryable.
var ErrIsolationUnavailable = errors.New("isolation unavailable on this host")

// ErrWorkerUnusable: the worker binary cannot run as a jailed worker
// (not executable by the workers' uids, or dynamically linked: the jail
// holds that one file, not the loader and libraries it names), or has no
// sandbox-gate beside it to start it. Only different binaries help, so
// it is the operator's to fix, not retryable.
var ErrWorkerUnusable = errors.New("the worker binary cannot run in the jail")
