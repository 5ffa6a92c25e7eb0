package supervisor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// changeLogSize is how many job changes the log keeps: a watcher that
// falls further behind is told to read every job again (Changes' reset).
// 4096 ids of ~24 bytes: ~100 KiB at most.
const changeLogSize = 4096

// changeLog numbers the job changes the notifier is told of and keeps
// the last changeLogSize of them, for the watchers of every job at once
// (list --watch, events --follow over several jobs, the dashboard's live
// updates): each asks for the jobs changed after the cursor it saw,
// instead of waiting on each job, or re-reading every job, in turn.
type changeLog struct {
	mu   sync.Mutex
	next uint64   // the number the next change gets
	ring []string // job ids; change n is at n % changeLogSize
	// gapAt: changes below it are not all in the ring (the cluster's
	// watch had a gap: notifyAll); a cursor below it is reset.
	gapAt uint64
	wake  chan struct{} // closed at the next change
}

func (l *changeLog) add(job string) {
	l.mu.Lock()
	if l.ring == nil {
		l.ring = make([]string, changeLogSize)
	}
	l.ring[l.next%changeLogSize] = job
	l.next++
	l.wakeLocked()
	l.mu.Unlock()
}

// gap says that changes were missed: every cursor before now is reset.
func (l *changeLog) gap() {
	l.mu.Lock()
	l.gapAt = l.next
	l.wakeLocked()
	l.mu.Unlock()
}

func (l *changeLog) wakeLocked() {
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}

// Changes is what changed after a cursor (JobChanges).
type Changes struct {
	// Cursor names this point: pass it as after next time.
	Cursor string
	// Jobs changed after the cursor given (submitted, moved, cancelled,
	// resolved), each once, in the order of their last change.
	Jobs []string
	// Reset: the cursor given is of another boot, or too old for the
	// log: read every job again (Jobs is empty).
	Reset bool
}

// JobChanges answers the jobs that changed after the cursor after (""
// answers at once, with the cursor of now and no jobs). With wait it
// blocks until there is a change or ctx ends (then it answers what
// there is: none). A cursor is this boot's: one of another boot, or
// malformed, is a reset, never an error.
func (s *Supervisor) JobChanges(ctx context.Context, after string, wait bool) (Changes, error) {
	l := &s.changes.log
	boot := s.ident().boot
	for {
		l.mu.Lock()
		cursor := fmt.Sprintf("%s.%d", boot, l.next)
		if after == "" {
			l.mu.Unlock()
			return Changes{Cursor: cursor, Jobs: []string{}}, nil
		}
		n, ok := parseCursor(after, boot)
		if !ok || n > l.next || n < l.gapAt || l.next-n > changeLogSize {
			l.mu.Unlock()
			return Changes{Cursor: cursor, Jobs: []string{}, Reset: true}, nil
		}
		if n < l.next || !wait {
			jobs := l.since(n)
			l.mu.Unlock()
			return Changes{Cursor: cursor, Jobs: jobs}, nil
		}
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return Changes{Cursor: cursor, Jobs: []string{}}, ctx.Err()
		}
	}
}

// since is the jobs of the changes numbered n and on, each once at its
// last change; under mu.
func (l *changeLog) since(n uint64) []string {
	jobs := []string{}
	seen := map[string]bool{}
	for k := l.next; k > n; k-- {
		id := l.ring[(k-1)%changeLogSize]
		if !seen[id] {
			seen[id] = true
			jobs = append(jobs, id)
		}
	}
	for i, j := 0, len(jobs)-1; i < j; i, j = i+1, j-1 {
		jobs[i], jobs[j] = jobs[j], jobs[i]
	}
	return jobs
}

// parseCursor is the change number of a cursor of this boot.
func parseCursor(c, boot string) (uint64, bool) {
	b, num, ok := strings.Cut(c, ".")
	if !ok || b != boot {
		return 0, false
	}
	n, err := strconv.ParseUint(num, 10, 64)
	return n, err == nil && strconv.FormatUint(n, 10) == num
}
