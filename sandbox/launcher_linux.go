package sandbox

import (
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
	cmd  *exec.Cmd
	done chan error
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
		req.done <- owned.start(req.cmd)
	}
}

// start forks cmd on the launcher thread.
func (l *launcher) start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	l.reqs <- launchReq{cmd: cmd, done: done}
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
