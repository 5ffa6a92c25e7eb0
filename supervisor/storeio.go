package supervisor

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// A store write can fail because the disk under the home is full (or
// read-only, over quota, failing). That must be visible: every such
// failure is logged at ERROR with its cause, and the write's caller gets
// io_error naming it. What happens next depends on who wrote:
//
//   - A write made for a client (a submission, a cancel, the start's
//     recovery) fails fast: the client is told, and the transaction left
//     nothing behind.
//   - A write that records an attempt's progress (prepared, running,
//     produced, verified, accepted, ended) cannot be skipped without the
//     store lying about the attempt, and recording a failure instead would
//     need the same disk. It is retried until space returns, so the
//     attempt ends properly once it does; meanwhile the attempt holds its
//     slot and publishes nothing. A supervisor that closes stops waiting:
//     the attempt stays unfinished in the store and the next boot's
//     recovery marks it unknown, as after a crash.
//
// bbolt writes pages it owns and the meta page last, so a failed commit
// leaves the last committed state intact: nothing accepted is lost.

// storeRetryInterval is how often a waiting write tries again.
const storeRetryInterval = time.Second

// ioErrnos are the causes a store write may fail with that are the host's
// (disk, quota, device), not the store's.
var ioErrnos = []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EROFS, syscall.EFBIG}

// ioCause names the host I/O failure in err ("no space left on device"),
// or "" when err is none.
func ioCause(err error) string {
	if err == nil {
		return ""
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		for _, e := range ioErrnos {
			if errno == e {
				return e.Error()
			}
		}
	}
	// bbolt formats some failures (growing and syncing the file) with %s,
	// which keeps the errno's text but drops the errno.
	msg := err.Error()
	for _, e := range ioErrnos {
		if strings.Contains(msg, e.Error()) {
			return e.Error()
		}
	}
	return ""
}

type failFastKey struct{}

// clientWrite marks ctx for a write made for a client: on an I/O failure
// it returns io_error at once instead of waiting for space.
func clientWrite(ctx context.Context) context.Context {
	return context.WithValue(ctx, failFastKey{}, true)
}

// ioGuard is the supervisor's handling of one store file's write
// failures: logged, mapped to io_error, and retried or not as described
// above. Every view of the file (its jobs, its fencing records, both)
// shares the one guard, so a run of failures is one run.
type ioGuard struct {
	log     *slog.Logger
	metrics *Metrics
	quit    <-chan struct{}
	retry   time.Duration

	mu         sync.Mutex
	since      time.Time // first failure of the current run of failures
	lastLog    time.Time
	suppressed int
}

func newIOGuard(log *slog.Logger, metrics *Metrics, quit <-chan struct{}) *ioGuard {
	return &ioGuard{log: log, metrics: metrics, quit: quit, retry: storeRetryInterval}
}

// update runs write (an Update of the store) until it commits, fails
// for a cause that is not the host's, or, failing for the host's, the
// write is a client's (it fails fast), the supervisor closes or ctx ends.
func (g *ioGuard) update(ctx context.Context, write func() error) error {
	for {
		err := write()
		cause := ioCause(err)
		if cause == "" {
			if err == nil {
				g.recovered()
			}
			return err
		}
		_, fast := ctx.Value(failFastKey{}).(bool)
		g.failed(err, cause, !fast)
		ioErr := protocol.Errorf(protocol.CodeIOError, "store write failed: %s", cause)
		if fast {
			return ioErr
		}
		t := time.NewTimer(g.retry)
		select {
		case <-t.C:
		case <-g.quit:
			t.Stop()
			return ioErr
		case <-ctx.Done():
			t.Stop()
			return ioErr
		}
	}
}

// batch runs write (a Batch of the store) once: an I/O failure fails
// fast. Batches are the dispatch engine's writes, made for a client (a
// reconcile, a grant) or for an act's way through the protocol, where
// an attempt left unknown is safe and waiting for space with the ward
// guard held is not.
func (g *ioGuard) batch(write func() error) error {
	err := write()
	cause := ioCause(err)
	if cause == "" {
		if err == nil {
			g.recovered()
		}
		return err
	}
	g.failed(err, cause, false)
	return protocol.Errorf(protocol.CodeIOError, "store write failed: %s", cause)
}

// guardedStore is the supervisor's view of its job store: writes go
// through its file's guard, and what they commit moves the overview's
// figures (figures_tx.go; nil: none are kept). Reads pass through.
type guardedStore struct {
	store.Store
	*ioGuard
	figures *figures
}

func (g *guardedStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	return recordingUpdate(g.figures, fn, func(fn func(store.Tx) error) error {
		return g.update(ctx, func() error { return g.Store.Update(ctx, fn) })
	})
}

func (g *guardedStore) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return recordingUpdate(g.figures, fn, func(fn func(store.Tx) error) error {
		return g.batch(func() error { return g.Store.Batch(ctx, fn) })
	})
}

// failed logs a failed write at ERROR: every one, except that a run of
// failures logs at most one line a second (with how many it left out), so
// that a full disk under load does not flood the log.
func (g *ioGuard) failed(err error, cause string, waiting bool) {
	g.metrics.storeWriteFailed()
	g.mu.Lock()
	now := time.Now()
	if g.since.IsZero() {
		g.since = now
	}
	if !g.lastLog.IsZero() && now.Sub(g.lastLog) < time.Second {
		g.suppressed++
		g.mu.Unlock()
		return
	}
	g.lastLog = now
	suppressed := g.suppressed
	g.suppressed = 0
	since := g.since
	g.mu.Unlock()
	args := []any{"cause", cause, "err", err}
	if waiting {
		args = append(args, "action", "retrying every "+g.retry.String()+" until the write succeeds")
	}
	if !now.Equal(since) {
		args = append(args, "failing_for", now.Sub(since).Round(time.Millisecond).String())
	}
	if suppressed > 0 {
		args = append(args, "failures_not_logged", suppressed)
	}
	g.log.Error("store write failed", args...)
}

func (g *ioGuard) recovered() {
	g.mu.Lock()
	if g.since.IsZero() {
		g.mu.Unlock()
		return
	}
	since, suppressed := g.since, g.suppressed
	g.since, g.lastLog, g.suppressed = time.Time{}, time.Time{}, 0
	g.mu.Unlock()
	g.metrics.storeWritable()
	args := []any{"failed_for", time.Since(since).Round(time.Millisecond).String()}
	if suppressed > 0 {
		args = append(args, "failures_not_logged", suppressed)
	}
	g.log.Warn("store writable again", args...)
}

// Check and Backup reach the store beneath (bolt.Checker, bolt.Backuper)
// when it offers them; neither writes the store.
func (g *guardedStore) Check(ctx context.Context) (*bolt.CheckReport, error) {
	c, ok := g.Store.(bolt.Checker)
	if !ok {
		return nil, ErrStoreOpUnsupported
	}
	return c.Check(ctx)
}

func (g *guardedStore) Backup(ctx context.Context, w io.Writer) (int64, error) {
	b, ok := g.Store.(bolt.Backuper)
	if !ok {
		return 0, ErrStoreOpUnsupported
	}
	return b.Backup(ctx, w)
}

// guardedLocal is the home's own store, both domains, through its
// file's guard.
type guardedLocal struct {
	store.Local
	*ioGuard
}

func (g guardedLocal) Update(ctx context.Context, fn func(store.LocalTx) error) error {
	return g.update(ctx, func() error { return g.Local.Update(ctx, fn) })
}

func (g guardedLocal) Batch(ctx context.Context, fn func(store.LocalTx) error) error {
	return g.batch(func() error { return g.Local.Batch(ctx, fn) })
}

// fenceStore is the fencing store as the dispatch engine sees it: every
// write fails fast on an I/O failure (see ioGuard.batch).
type fenceStore struct {
	store.Fencing
	*ioGuard
}

func (f fenceStore) Update(ctx context.Context, fn func(store.FencingTx) error) error {
	return f.update(clientWrite(ctx), func() error { return f.Fencing.Update(ctx, fn) })
}

func (f fenceStore) Batch(ctx context.Context, fn func(store.FencingTx) error) error {
	return f.batch(func() error { return f.Fencing.Batch(ctx, fn) })
}
