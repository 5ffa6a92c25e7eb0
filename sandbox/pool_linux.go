package sandbox

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Pool keeps Size isolated inits pre-started and blocked on their gates,
// so that an attempt does not pay for the fork, the namespaces and the init's
// runtime start. A pooled init has no job data, no work dir, no socket dir
// and no limits: it is bound to an attempt by Take, which moves it into the
// attempt's groups (cgroup.procs of Placement.CgroupFD, then Place) while it
// is still gated, and only then sends it the attempt's config.
//
// Pooled inits run in the supervisor's own cgroup until taken; what they
// allocated before (their runtime start) stays charged there.
type Pool struct {
	tmpl Config
	size int

	mu     sync.Mutex
	idle   []*gatedProc
	spawns int // in flight
	closed bool
	err    error // last spawn failure, for Take's fallback
	wg     sync.WaitGroup
}

// NewPool starts filling a pool for workers launched like tmpl. tmpl must be
// an isolated Config; its WorkerPath, Namespaces and RunAs are fixed for
// every slot, and it must not carry a Placement (a pooled init is placed at
// Take, by the attempt's own Placement).
func NewPool(tmpl Config, size int) (*Pool, error) {
	if tmpl.Mode != ModeIsolated {
		return nil, fmt.Errorf("%w: a pool needs ModeIsolated", ErrInvalidConfig)
	}
	if tmpl.Placement != nil || tmpl.KillHook != nil {
		return nil, fmt.Errorf("%w: a pool template must not set Placement or KillHook", ErrInvalidConfig)
	}
	if size < 1 {
		return nil, fmt.Errorf("%w: pool size %d", ErrInvalidConfig, size)
	}
	if err := tmpl.Validate(); err != nil {
		return nil, err
	}
	p := &Pool{tmpl: tmpl.withDefaults(), size: size}
	p.mu.Lock()
	p.refillLocked()
	p.mu.Unlock()
	return p, nil
}

// refillLocked starts spawners until idle + in flight reaches the size.
func (p *Pool) refillLocked() {
	for !p.closed && len(p.idle)+p.spawns < p.size {
		p.spawns++
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			gp, err := spawnGated(&p.tmpl)
			p.mu.Lock()
			defer p.mu.Unlock()
			p.spawns--
			if err != nil {
				p.err = err
				return // the next Take retries
			}
			gp.pooled = true
			if p.closed {
				discard(gp)
				return
			}
			p.idle = append(p.idle, gp)
		}()
	}
}

// Take returns a Sandbox for one attempt, backed by a pre-started init when
// one is ready and by a fresh launch otherwise (Take never waits for the
// pool). cfg must be launchable on its own and agree with the pool's
// template on WorkerPath, Namespaces and RunAs.
func (p *Pool) Take(cfg Config) (*Sandbox, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.WorkFS != nil {
		// Descriptors are inherited at the fork, long before the
		// attempt exists: a pooled init cannot be given a work mount.
		return nil, fmt.Errorf("%w: a pooled init cannot take a WorkFS", ErrInvalidConfig)
	}
	if !p.compatible(&s.cfg) {
		return nil, fmt.Errorf("%w: config differs from the pool's template in WorkerPath, Namespaces or RunAs", ErrInvalidConfig)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrPoolClosed
	}
	for len(p.idle) > 0 {
		gp := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if exitedUnreaped(gp.cmd.Process.Pid) {
			discard(gp)
			continue
		}
		s.gated = gp
		break
	}
	p.refillLocked()
	return s, nil
}

func (p *Pool) compatible(c *Config) bool {
	t := &p.tmpl
	if c.Mode != ModeIsolated || c.WorkerPath != t.WorkerPath || c.Namespaces != t.Namespaces {
		return false
	}
	if (c.RunAs == nil) != (t.RunAs == nil) {
		return false
	}
	return c.RunAs == nil || *c.RunAs == *t.RunAs
}

// Idle is the number of gated inits ready to be taken.
func (p *Pool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// Close stops refilling and ends every idle init by closing its gate: an
// init that gets EOF instead of a config exits without running anything.
// Sandboxes already taken are not affected.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	p.wg.Wait()
	var errs []error
	for _, gp := range idle {
		if err := discard(gp); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// discard closes the gate of an unused init and reaps it.
func discard(gp *gatedProc) error {
	gp.closeAll()
	pid := gp.cmd.Process.Pid
	err := gp.cmd.Wait()
	owned.release(pid)
	gp.netns.end(true) // it never got a config: nothing ran in it
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) && ee.ExitCode() == initExitNoConfig {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sandbox: pooled init %d: %w", pid, err)
	}
	return nil
}

func exitedUnreaped(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err != nil || info.Signo != 0
}
