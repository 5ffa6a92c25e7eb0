package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// warmPool keeps workers started ahead of time: each in its own cgroup
// (pids limit, no memory limit yet), jailed, handshaken, with an empty
// work dir of its own mounted at /work. An attempt takes one and binds it
// before any job data reaches it: the attempt's limits are written to the
// worker's cgroup, and its work dir is swapped with the attempt's sandbox
// dir (one renameat2 RENAME_EXCHANGE on the host; the worker's bind mount
// follows the directory). What the attempt then waits for is one RPC, not
// a process start, a jail and a handshake. A worker serves exactly one
// attempt and is killed after it, like a fresh one.
type warmPool struct {
	l    *ProcessLauncher
	size int
	dir  string // <home>/warm
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
	p := &warmPool{l: l, size: size, dir: warmDir(l.cfg.Home), once: once}
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
	w   *processWorker
	dir string
}

// warmDir holds the warm workers' own work dirs (removed at start as
// leftovers).
func warmDir(home string) string { return filepath.Join(home, "warm") }

// discard kills a worker that will serve no attempt and removes its dir.
func (ww *warmWorker) discard() {
	ww.w.Close(context.Background())
	os.RemoveAll(ww.dir)
}

// take binds a ready worker to req, waiting for one whose start is in
// flight (it is further along than a fresh launch would be), or returns
// nil when there is none (then the caller launches a fresh one). The pool
// refills in the background.
func (p *warmPool) take(req LaunchRequest) Worker {
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

// bind gives a warm worker the attempt's limits and its sandbox dir.
func (p *warmPool) bind(ww *warmWorker, req LaunchRequest) error {
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
	// The attempt's dir (fresh and empty) and the worker's dir trade
	// places; the empty one left at the warm path is removed.
	if err := unix.Renameat2(unix.AT_FDCWD, ww.dir, unix.AT_FDCWD, req.WorkDir, unix.RENAME_EXCHANGE); err != nil {
		return fmt.Errorf("bind work dir %s: %w", req.WorkDir, err)
	}
	if err := os.Remove(ww.dir); err != nil {
		p.l.log.Warn("remove swapped-out dir", "dir", ww.dir, "err", err)
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
	dir := filepath.Join(p.dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	w, err := p.l.launch(context.Background(), name, 0, protocol.Limits{}, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &warmWorker{w: w, dir: dir}, nil
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
