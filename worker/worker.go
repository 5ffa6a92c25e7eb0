package worker

import (
	"context"
	"fmt"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Worker implements protocol.Service. It is safe for concurrent use; each
// Run has its own machine and its own view of the job.
type Worker struct {
	cfg  Config
	caps protocol.Capabilities
	desc protocol.WorkerDescriptor

	// base is cancelled by Shutdown; every run's context follows it.
	base     context.Context
	stopBase context.CancelCauseFunc

	mu      sync.Mutex
	closing bool
	runs    sync.WaitGroup
}

var _ protocol.Service = (*Worker)(nil)

// New validates cfg (after filling in defaults) and returns a worker. The
// capabilities and the descriptor are built and validated here, once, so
// that a misconfigured worker fails at start rather than on its first
// Describe.
func New(cfg Config) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg}
	w.caps = w.capabilities()
	w.desc = w.descriptor()
	if err := w.caps.Validate(); err != nil {
		return nil, fmt.Errorf("%w: capabilities: %w", ErrInvalidConfig, err)
	}
	if err := w.desc.Validate(); err != nil {
		return nil, fmt.Errorf("%w: descriptor: %w", ErrInvalidConfig, err)
	}
	w.base, w.stopBase = context.WithCancelCause(context.Background())
	return w, nil
}

// Config returns the configuration in force, defaults filled in.
func (w *Worker) Config() Config { return w.cfg }

// Describe reports the worker's own capabilities and its descriptor.
func (w *Worker) Describe(context.Context) (protocol.Capabilities, protocol.WorkerDescriptor, error) {
	caps := w.caps
	caps.Contracts = append([]string(nil), caps.Contracts...)
	caps.ProofKinds = append([]string(nil), caps.ProofKinds...)
	caps.Operations = append([]protocol.Operation(nil), caps.Operations...)
	return caps, w.desc, nil
}

// errShuttingDown refuses runs that arrive after Shutdown.
var errShuttingDown = protocol.Errorf(protocol.CodeCancelled, "the worker is shutting down")

// Shutdown cancels every run in progress and waits, within ctx, until they
// have returned. Runs started afterwards are refused. Calling it again is
// harmless.
func (w *Worker) Shutdown(ctx context.Context) error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.stopBase(errShuttingDown)
	done := make(chan struct{})
	go func() {
		w.runs.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return protocol.Errorf(protocol.CodeInternalError, "shutdown: runs still draining when the deadline came")
	}
}

// begin registers a run, unless the worker is shutting down.
func (w *Worker) begin() (release func(), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return nil, errShuttingDown
	}
	w.runs.Add(1)
	return w.runs.Done, nil
}

// runContext ends when ctx ends or when the worker shuts down, keeping the
// cause of whichever came first.
func (w *Worker) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(w.base, func() { cancel(context.Cause(w.base)) })
	return rctx, func() {
		stop()
		cancel(nil)
	}
}
