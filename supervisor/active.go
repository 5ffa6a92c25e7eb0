package supervisor

import (
	"sync"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// active is an attempt this boot is running. Cancel requests and forced
// kills reach the attempt's goroutine through it.
type active struct {
	job  *store.Job
	spec []byte // the frozen spec (canonical bytes), read when prepared
	n    uint32
	gen  uint64 // the placement generation it was prepared (and claimed) in

	once     sync.Once
	cancelCh chan struct{} // closed on the first cancel request
	reason   string
	shutdown bool // the cancel comes from the supervisor's own shutdown

	killOnce sync.Once
	killCh   chan struct{} // closed to kill without grace

	ackOnce sync.Once
	ackCh   chan struct{} // closed when the acknowledgement is recorded

	// finished is closed when the attempt's goroutine has returned.
	finished chan struct{}

	// steps are transitions kept for the next write (one-shot; see
	// steps.go).
	stepsMu sync.Mutex
	steps   []step
}

func newActive(job *store.Job, spec []byte, n uint32) *active {
	return &active{job: job, spec: spec, n: n, cancelCh: make(chan struct{}), killCh: make(chan struct{}), ackCh: make(chan struct{}),
		finished: make(chan struct{})}
}

// shutdownReason is the cancel reason of an attempt Close interrupts.
const shutdownReason = "supervisor shutdown"

func (a *active) requestCancel(reason string, shutdown bool) {
	a.once.Do(func() {
		a.reason, a.shutdown = reason, shutdown
		close(a.cancelCh)
	})
}

// cancelInfo is the cancel request's reason and whether it came from the
// shutdown; "" and false before any request. They are written before
// cancelCh closes, so they are read only once the close is seen.
func (a *active) cancelInfo() (reason string, shutdown bool) {
	if !a.cancelled() {
		return "", false
	}
	return a.reason, a.shutdown
}

func (a *active) cancelled() bool {
	select {
	case <-a.cancelCh:
		return true
	default:
		return false
	}
}

func (a *active) kill() { a.killOnce.Do(func() { close(a.killCh) }) }

func (a *active) acknowledged() { a.ackOnce.Do(func() { close(a.ackCh) }) }
