package limits

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// defaultKillBound bounds a kill whose context has no deadline: a kill that
// cannot finish must surface as an error, not hang the supervisor.
const defaultKillBound = 30 * time.Second

// killTarget is one cgroup node in every hierarchy, to be emptied.
type killTarget struct {
	v2         string   // cgroup2 dir, "" if none
	cgroupKill bool     // v2 has cgroup.kill and it should be used
	v1         []string // distinct v1 dirs
	freezer    string   // v1 freezer dir, "" if none
}

func (m *Manager) killTarget(d dirSet) killTarget {
	return killTarget{v2: d.v2, cgroupKill: m.cgroupKill, v1: d.v1(), freezer: d.freezer}
}

// kill empties the target and returns the method that did the main work.
//
// With cgroup.kill the kernel kills the whole subtree atomically with
// respect to fork, and cgroup.events says when it is empty. Without it the
// freezer stops every task first so that none can fork while the pids are
// being read and signalled (a plain signal loop only converges if a pids
// limit caps the fork rate); the v1 groups are swept that way when there
// is no cgroup.kill.
func (t killTarget) kill(ctx context.Context) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultKillBound)
		defer cancel()
	}
	method := ""
	if t.v2 != "" && t.cgroupKill {
		err := writeFile(t.v2, "cgroup.kill", "1")
		switch {
		case err == nil:
			method = KillMethodCgroupKill
			if err := waitUnpopulated(ctx, t.v2); err != nil {
				return method, err
			}
			// Every process of a group is in its v2 group: the launcher
			// starts it there (CLONE_INTO_CGROUP) or Place writes v2
			// first, and nothing inside a worker can move it out. So the
			// v1 groups are empty too, and reading their cgroup.procs
			// (a pidlist the kernel frees a second later on a kworker)
			// would only confirm it.
			return method, nil
		case errors.Is(err, os.ErrNotExist):
			// Removed already (Delete, leftover sweep): nothing lives there.
		default:
			return method, err
		}
	}
	sweep := t.v1
	if t.v2 != "" && method == "" {
		sweep = append([]string{t.v2}, t.v1...)
	}
	pids, err := pidsOf(sweep)
	if err != nil {
		return method, err
	}
	if len(pids) == 0 {
		return method, nil
	}
	self := os.Getpid()
	selfInside := false
	for _, p := range pids {
		if p == self {
			selfInside = true
		}
	}
	var fr freezer
	switch {
	case selfInside:
		// A launcher thread of ours is inside (thread-migration placement
		// in progress). Freezing would freeze the supervisor itself.
	case t.freezer != "" && exists(t.freezer):
		fr = v1Freezer(t.freezer)
	case t.v2 != "" && exists(t.v2+"/cgroup.freeze"):
		fr = v2Freezer(t.v2)
	}
	if fr != nil {
		if method == "" {
			method = KillMethodFreezer
		}
		// Best effort: a task stuck in FREEZING (uninterruptible sleep)
		// still gets SIGKILL and dies once thawed.
		_ = fr.freeze(ctx)
		signalAll(sweep)
		if err := fr.thaw(); err != nil && !errors.Is(err, os.ErrNotExist) {
			return method, err
		}
	}
	return method, waitEmpty(ctx, sweep)
}

// signalAll sends SIGKILL to every process in dirs except the supervisor.
func signalAll(dirs []string) {
	pids, _ := pidsOf(dirs)
	self := os.Getpid()
	for _, p := range pids {
		if p != self {
			_ = unix.Kill(p, unix.SIGKILL)
		}
	}
}

// waitEmpty polls until no process is left in dirs, re-sending SIGKILL to
// stragglers each round (they may have forked before the first signal).
func waitEmpty(ctx context.Context, dirs []string) error {
	delay := 200 * time.Microsecond
	for {
		pids, err := pidsOf(dirs)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %v (pids %v)", ErrKillIncomplete, ctx.Err(), pids)
		}
		signalAll(dirs)
		sleepCtx(ctx, delay)
		if delay < 5*time.Millisecond {
			delay *= 2
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// waitUnpopulated waits until cgroup.events of the v2 group at dir says
// "populated 0", re-reading it on a growing timer: 100 µs, a quarter
// longer each round, at most 5 ms (the slow growth keeps the overshoot
// past the actual end of the tree under a quarter). The file is opened
// once and re-read from offset 0, which makes the kernel generate it anew;
// a kill takes about six reads, and the opens were most of their cost.
// It does not sleep on inotify, for two kernel reasons measured here:
// closing an inotify instance waits for an SRCU grace period (23.7 ms in
// one strace of BenchmarkKillTree20, which took 16 ms per kill against
// 2-3 ms polling), and cgroup.events notifications are rate-limited to one
// per 10 ms per file anyway. A group that disappears counts as empty.
func waitUnpopulated(ctx context.Context, dir string) error {
	fd, p, err := openEvents(dir)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer unix.Close(fd)
	step := 100 * time.Microsecond
	var buf [512]byte
	for {
		populated, err := preadPopulated(fd, buf[:])
		if err != nil {
			if errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENOENT) {
				return nil // removed while we watched: empty
			}
			return fmt.Errorf("limits: read %s: %w", p, err)
		}
		if !populated {
			return nil
		}
		if ctx.Err() != nil {
			pids, _ := procsRecursive(dir)
			return fmt.Errorf("%w: %v (pids %v in %s)", ErrKillIncomplete, ctx.Err(), pids, dir)
		}
		sleepCtx(ctx, step)
		step = min(step*5/4, 5*time.Millisecond)
	}
}

// preadPopulated reads "populated" from an open cgroup.events.
func preadPopulated(fd int, buf []byte) (bool, error) {
	var n int
	var err error
	for {
		n, err = unix.Pread(fd, buf, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return false, err
	}
	v, ok := parseKeyed(buf[:n])["populated"]
	if !ok {
		return false, fmt.Errorf("cgroup.events has no populated key in %q", buf[:n])
	}
	return v != 0, nil
}

// readPopulated reads "populated" from cgroup.events once.
func readPopulated(dir string) (bool, error) {
	fd, p, err := openEvents(dir)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	var buf [512]byte
	populated, err := preadPopulated(fd, buf[:])
	if err != nil {
		return false, fmt.Errorf("limits: read %s: %w", p, err)
	}
	return populated, nil
}

// openEvents opens the v2 group's cgroup.events for preadPopulated.
func openEvents(dir string) (int, string, error) {
	p := filepath.Join(dir, "cgroup.events")
	fd, err := openRetry(p, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return -1, p, fmt.Errorf("limits: open %s: %w", p, err)
	}
	return fd, p, nil
}
