package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
)

// The launcher is one goroutine locked to its OS thread for the life of the
// process, and every worker is forked from it. Pdeathsig fires when the
// forking *thread* exits, not the process (isolation probe §4): forking from
// an arbitrary goroutine would let the Go scheduler retire that thread and
// SIGKILL a healthy worker.
type launcher struct {
	reqs chan launchReq
}

type launchReq struct {
	cmd *exec.Cmd
	// place, when set, takes the launcher thread into the child's groups
	// for the fork (ThreadPlacement).
	place ThreadPlacement
	done  chan launchResult
}

type launchResult struct {
	err error
	// placed: the child was born in its groups (the thread was in them).
	placed bool
}

var theLauncher = sync.OnceValue(func() *launcher {
	l := &launcher{reqs: make(chan launchReq)}
	go l.loop()
	return l
})

func (l *launcher) loop() {
	runtime.LockOSThread()
	// Never unlocked and never returns: the thread must outlive every child.
	for req := range l.reqs {
		res, tainted := fork(req)
		req.done <- res
		if tainted {
			// This thread may be left in a worker's groups: a successor
			// forks from now on, and this one stays, parked, as long as
			// the process (the Pdeathsig parent of what it forked).
			go l.loop()
			select {}
		}
	}
}

// fork starts req.cmd, with the launcher thread in the child's groups
// when req.place takes it. tainted: the thread may not be back in this
// process's own groups.
func fork(req launchReq) (res launchResult, tainted bool) {
	var leave func() error
	if req.place != nil {
		lv, entered, err := req.place.EnterThread()
		if err != nil {
			return launchResult{err: fmt.Errorf("sandbox: place the launcher thread: %w", err)}, true
		}
		if entered {
			leave = lv
		}
	}
	err := owned.start(req.cmd)
	if leave == nil {
		return launchResult{err: err}, false
	}
	if lerr := leave(); lerr != nil {
		if err == nil {
			// The child is placed, but the thread is not back: fail the
			// launch as a whole rather than fork anything more from here.
			_ = req.cmd.Process.Kill()
			_ = req.cmd.Wait()
			owned.release(req.cmd.Process.Pid)
		}
		return launchResult{err: errors.Join(err, fmt.Errorf("sandbox: move the launcher thread back: %w", lerr))}, true
	}
	return launchResult{err: err, placed: err == nil}, false
}

// start forks cmd on the launcher thread (in place's groups, when set).
func (l *launcher) start(cmd *exec.Cmd, place ThreadPlacement) launchResult {
	done := make(chan launchResult, 1)
	l.reqs <- launchReq{cmd: cmd, place: place, done: done}
	return <-done
}

// ownedSet is the set of child pids whose status belongs to an exec.Cmd of
// this package. The reaper never touches them. The lock is held across the
// fork so a child that dies at once cannot be reaped before it is recorded.
type ownedSet struct {
	mu   sync.Mutex
	pids map[int]struct{}
}

var owned = &ownedSet{pids: map[int]struct{}{}}

func (o *ownedSet) start(cmd *exec.Cmd) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	o.pids[cmd.Process.Pid] = struct{}{}
	return nil
}

// release is called after exec.Cmd.Wait has collected the status.
func (o *ownedSet) release(pid int) {
	o.mu.Lock()
	delete(o.pids, pid)
	o.mu.Unlock()
}

func (o *ownedSet) has(pid int) bool {
	_, ok := o.pids[pid]
	return ok
}
