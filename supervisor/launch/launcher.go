// Package launch starts the workers of a supervisor's attempts: the
// Launcher contract the supervisor depends on, and the process launcher
// (New) that puts each worker in its own cgroups and namespaces through
// sandbox/ and limits/ and speaks go-plugin to it. The supervisor only
// decides policy; what a launcher can do beyond the contract's minimum it
// declares in a Capabilities value, and launchtest holds every launcher
// to what it declares.
package launch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Launcher starts workers.
type Launcher interface {
	// Capabilities is what this launcher declares: what its host and
	// worker enforce, and which of the optional parts of this contract
	// it provides. It does not change after the launcher is made.
	Capabilities() Capabilities
	// Launch starts the worker of one attempt. The worker has run no code
	// before its limits applied.
	Launch(ctx context.Context, req Request) (Worker, error)
	// Prewarm starts the launcher's warm workers now, in the background,
	// so that the next attempt finds one ready (Capabilities.Warm). A
	// launcher that keeps none returns ErrUnsupported.
	Prewarm() error
	// RemoveLeftovers kills and removes what workers of earlier boots left
	// (cgroups, processes, sockets) and names what it removed.
	RemoveLeftovers(ctx context.Context) ([]string, error)
	Close() error
}

// Capabilities is what a launcher declares about itself. The supervisor
// reads it instead of probing the launcher for optional methods, and the
// conformance suite (launchtest) checks each declared part works and each
// undeclared one is refused.
type Capabilities struct {
	// Worker is what this host and worker together enforce, and the
	// worker's description: jobs asking for anything else are refused
	// before dispatch.
	Worker protocol.Capabilities
	// OwnWorkDirs: every worker works in a bounded work dir of its own
	// (a jailed worker's tmpfs), never in the attempt's sandbox. Its
	// launches take no Request.WorkDir; Worker.Files opens the work dir
	// and Worker.WorkDirFull tells whether the worker filled it. Without
	// it a launch needs Request.WorkDir, the worker works there, Files
	// returns nil and WorkDirFull false.
	OwnWorkDirs bool
	// Warm: the launcher keeps workers started ahead of their attempts
	// and Prewarm starts them.
	Warm bool
	// Host is what the launcher found on this host, for `capabilities`;
	// nil when it cannot say.
	Host *HostReport
}

// HostReport is what a launcher found on its host: how workers are
// launched and the limits probe (limits.Capabilities for the process
// launcher).
type HostReport struct {
	Isolation string `json:"isolation"`
	Probe     any    `json:"probe"`
}

// ErrUnsupported: the launcher was asked for something its Capabilities
// do not declare.
var ErrUnsupported = errors.New("not supported by this launcher")

// Request is what a launch needs to know about an attempt.
type Request struct {
	Job     string
	Attempt uint32
	Limits  protocol.Limits
	// WorkDir is the attempt's sandbox directory on the host: the
	// worker's work dir. A launcher that declares OwnWorkDirs is given
	// "" (its workers have work dirs of their own, and the sandbox is
	// made only when something is kept in it); any other needs it.
	WorkDir string
}

// CheckRequest refuses a request that does not fit what c declares: a
// work dir given to a launcher whose workers have their own, or none
// given to one whose workers work in the attempt's.
func (c Capabilities) CheckRequest(req Request) error {
	switch {
	case c.OwnWorkDirs && req.WorkDir != "":
		return fmt.Errorf("%w: its workers work in dirs of their own, the launch names %s", ErrUnsupported, req.WorkDir)
	case !c.OwnWorkDirs && req.WorkDir == "":
		return fmt.Errorf("%w: its workers work in the attempt's dir, the launch names none", ErrUnsupported)
	}
	return nil
}

// Worker is one running worker process (tree).
type Worker interface {
	// Describe asks the worker what it enforces and who it is.
	Describe(ctx context.Context) (protocol.Capabilities, protocol.WorkerDescriptor, error)
	// Start gives the worker its job; the run ends with its result.
	Start(ctx context.Context, req protocol.RunRequest) (Run, error)
	// WorkDir is the attempt directory as the worker sees it (the
	// RunRequest's WorkDir).
	WorkDir() string
	// Files is the worker's work dir as the host sees it when that is not
	// the attempt's sandbox dir (Capabilities.OwnWorkDirs), nil
	// otherwise. The caller closes it.
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

// Run is one job's run in a worker (pluginclient.Run for the process
// launcher's workers).
type Run interface {
	// Done is closed when the result (or the run's failure) is in.
	Done() <-chan struct{}
	// Wait returns the result.
	Wait(ctx context.Context) (protocol.Result, error)
	// Cancel asks the worker to stop and reports whether it acknowledged.
	Cancel(ctx context.Context, reason string) (bool, error)
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
