package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// warmPool keeps workers started ahead of time: each in its own cgroup
// (pids limit, no memory limit yet), jailed, handshaken, with its own uid
// and its own tmpfs at /work (sized for a job without an artifact limit).
// An attempt takes one and binds it before any job data reaches it: the
// attempt's limits are written to the worker's cgroup and its tmpfs is
// resized to the attempt's bound. What the attempt then waits for is one
// RPC, not a process start, a jail and a handshake. A worker serves
// exactly one attempt and is killed after it, like a fresh one; what it
// wrote before the job is as untrusted as what it writes during it (the
// supervisor keeps only what it verified).
type warmPool struct {
	l    *ProcessLauncher
	size int
	// once: the pool is for one job (LauncherConfig.OneShot): Prewarm
	// starts its worker and nothing refills it.
	once bool

	mu       sync.Mutex
	cond     *sync.Cond // signalled when a start ends
	idle     []*warmWorker
	starting int
	waiting  int // takes waiting for a start in flight
	started  bool
	closed   bool
	wg       sync.WaitGroup
}

func newWarmPool(l *ProcessLauncher, size int, once bool) *warmPool {
	p := &warmPool{l: l, size: size, once: once}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// prewarm starts the pool's workers now, rather than at the first take.
func (p *warmPool) prewarm() {
	p.mu.Lock()
	p.refillLocked()
	p.mu.Unlock()
}

type warmWorker struct {
	w *processWorker
}

// warmDir held the warm workers' work dirs before they had a tmpfs each;
// a home from then may still have one (removed at start as leftovers).
func warmDir(home string) string { return filepath.Join(home, "warm") }

// discard kills a worker that will serve no attempt.
func (ww *warmWorker) discard() {
	ww.w.Close(context.Background())
}

// take binds a ready worker to req, waiting for one whose start is in
// flight (it is further along than a fresh launch would be), or returns
// nil when there is none (then the caller launches a fresh one). The pool
// refills in the background.
func (p *warmPool) take(req Request) Worker {
	for {
		p.mu.Lock()
		p.refillLocked()
		for len(p.idle) == 0 && p.starting > p.waiting && !p.closed {
			p.waiting++
			p.cond.Wait()
			p.waiting--
		}
		var ww *warmWorker
		if n := len(p.idle); n > 0 {
			ww, p.idle = p.idle[n-1], p.idle[:n-1]
		}
		p.refillLocked()
		p.mu.Unlock()
		if ww == nil {
			return nil
		}
		if err := p.bind(ww, req); err != nil {
			p.l.log.Warn("warm worker unusable, trying another", "err", err)
			ww.discard()
			continue
		}
		return ww.w
	}
}

// bind gives a warm worker the attempt's limits and its work dir's bound.
func (p *warmPool) bind(ww *warmWorker, req Request) error {
	if ww.w.sb != nil {
		select {
		case <-ww.w.sb.Done():
			return fmt.Errorf("warm worker exited")
		default:
		}
	}
	if err := ww.w.group.Update(p.l.groupSpec(req.Limits)); err != nil {
		return err
	}
	// The kernel refuses a bound below what the worker already wrote:
	// then it is discarded.
	if err := ww.w.work.resize(p.l.workDirBound(req.Limits)); err != nil {
		return fmt.Errorf("bind work dir: %w", err)
	}
	ww.w.stderr.label(req.Job, req.Attempt)
	return nil
}

func (p *warmPool) refillLocked() {
	if p.once && p.started {
		return
	}
	p.started = true
	for !p.closed && len(p.idle)+p.starting < p.size {
		p.starting++
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			ww, err := p.start()
			p.mu.Lock()
			defer p.mu.Unlock()
			defer p.cond.Broadcast()
			p.starting--
			if err != nil {
				p.l.log.Warn("start warm worker", "err", err)
				return
			}
			if p.closed {
				ww.discard()
				return
			}
			p.idle = append(p.idle, ww)
		}()
	}
}

func (p *warmPool) start() (*warmWorker, error) {
	var b [8]byte
	rand.Read(b[:])
	name := "warm-" + hex.EncodeToString(b[:])
	w, err := p.l.launch(context.Background(), name, 0, protocol.Limits{}, "")
	if err != nil {
		return nil, err
	}
	return &warmWorker{w: w}, nil
}

// close kills the idle workers and waits for those starting.
func (p *warmPool) close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	p.wg.Wait()
	for _, ww := range idle {
		ww.discard()
	}
}

// WaitWarm waits until the warm pool holds all its workers ready (for
// benchmarks that measure an attempt from a full pool).
func (l *ProcessLauncher) WaitWarm(ctx context.Context) error {
	if l.warm == nil {
		return ErrUnsupported
	}
	return l.warm.waitFull(ctx)
}

func (p *warmPool) waitFull(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.idle) < p.size {
		if p.closed {
			return fmt.Errorf("warm pool closed")
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// A start that failed left room: it is tried again.
		p.refillLocked()
		p.cond.Wait()
	}
	return nil
}
