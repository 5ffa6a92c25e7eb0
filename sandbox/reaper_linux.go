package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// reapGrace is how long a zombie child that this package did not start must
// stay a zombie before the reaper collects it. Orphans re-parented to a
// subreaper are nobody else's business, but a direct child started by other
// code in the process through os/exec is, and its Wait normally collects it
// within microseconds; the grace keeps the reaper from stealing that status.
const reapGrace = time.Second

var (
	reaperOnce sync.Once
	reaperErr  error
)

// BecomeSubreaper marks the process as a child subreaper
// (PR_SET_CHILD_SUBREAPER): descendants orphaned by a worker are re-parented
// to the supervisor instead of PID 1, which here reaps lazily, and a
// background reaper collects them. Children started by this package are
// never reaped by it (their exec.Cmd does); other direct children are left
// alone for reapGrace. Safe to call more than once.
func BecomeSubreaper() error {
	reaperOnce.Do(func() {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			reaperErr = fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
			return
		}
		go reapLoop()
	})
	return reaperErr
}

// reapLoop scans on a ticker, and only after a SIGCHLD or while zombies
// are waiting out their grace. A scan reads /proc/self/task/*/children for
// every thread and the stat of every child; scanning on each SIGCHLD did
// that once per finished worker (a dozen opens per job at 100 jobs/s),
// although no zombie can be reaped before its grace is over anyway.
func reapLoop() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGCHLD)
	tick := time.NewTicker(reapGrace / 2)
	defer tick.Stop()
	firstSeen := map[int]time.Time{}
	exited := false
	for {
		select {
		case <-sigs:
			exited = true
		case <-tick.C:
			if exited || len(firstSeen) > 0 {
				exited = false
				reapOrphans(firstSeen, time.Now())
			}
		}
	}
}

// reapOrphans collects zombie children that are not owned and have been
// zombies for at least reapGrace. It returns the pids it reaped.
func reapOrphans(firstSeen map[int]time.Time, now time.Time) []int {
	var reaped []int
	zombies := map[int]bool{}
	for _, pid := range childPids() {
		if isZombie(pid) {
			zombies[pid] = true
		}
	}
	for pid := range firstSeen {
		if !zombies[pid] {
			delete(firstSeen, pid)
		}
	}
	owned.mu.Lock()
	defer owned.mu.Unlock()
	for pid := range zombies {
		if owned.has(pid) {
			continue
		}
		seen, ok := firstSeen[pid]
		if !ok {
			firstSeen[pid] = now
			continue
		}
		if now.Sub(seen) < reapGrace {
			continue
		}
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG, nil); err == nil {
			reaped = append(reaped, pid)
		}
		delete(firstSeen, pid)
	}
	return reaped
}

// childPids lists the direct children of every thread of this process.
func childPids() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may itself
	// contain ") ".
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}
