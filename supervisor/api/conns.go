package api

import (
	"container/list"
	"context"
	"net"
	"net/http"
	"sync"
)

// connTracker caps the connections the server holds. Each costs a
// goroutine and buffers (about 30 KB measured under a slow-client storm),
// so 20,000 slow clients once held 590 MB of the daemon and most of its
// descriptors. At the cap, a new connection takes the place of the one that
// has waited longest without a request in progress: a connection that is
// idle, or still sending its request (line, headers or body), is cheap to
// drop and its client can try again, while one whose request is being
// answered (a submission being admitted, a long poll) is kept. If every
// connection is being answered, the newcomer is answered busy. A client
// trickling bytes therefore never keeps a prompt one out: the prompt one's
// request is in before enough newcomers arrive to push it out.
type connTracker struct {
	max int
	// onEvict and onRefuse report what the cap did (for logs and tests).
	onEvict, onRefuse func()

	mu    sync.Mutex
	conns map[net.Conn]*tracked
	// waiting are the connections without a request in progress, the
	// longest waiting first: the candidates for eviction.
	waiting list.List
}

type tracked struct {
	c    net.Conn
	elem *list.Element // in waiting, or nil while a request is answered
}

func newConnTracker(max int) *connTracker {
	return &connTracker{max: max, conns: make(map[net.Conn]*tracked, max)}
}

// admit registers a new connection. At the cap it evicts the connection
// waiting longest; with none to evict it refuses the new one.
func (t *connTracker) admit(c net.Conn) bool {
	t.mu.Lock()
	var victim net.Conn
	if len(t.conns) >= t.max {
		front := t.waiting.Front()
		if front == nil {
			t.mu.Unlock()
			if t.onRefuse != nil {
				t.onRefuse()
			}
			return false
		}
		victim = t.remove(front.Value.(*tracked))
	}
	tc := &tracked{c: c}
	tc.elem = t.waiting.PushBack(tc)
	t.conns[c] = tc
	t.mu.Unlock()
	if victim != nil {
		victim.Close()
		if t.onEvict != nil {
			t.onEvict()
		}
	}
	return true
}

func (t *connTracker) remove(tc *tracked) net.Conn {
	if tc.elem != nil {
		t.waiting.Remove(tc.elem)
		tc.elem = nil
	}
	delete(t.conns, tc.c)
	return tc.c
}

// setWaiting moves a connection in or out of the eviction candidates; a
// connection that becomes a candidate goes to the back.
func (t *connTracker) setWaiting(c net.Conn, waiting bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tc := t.conns[c]
	if tc == nil { // evicted meanwhile
		return
	}
	switch {
	case waiting && tc.elem == nil:
		tc.elem = t.waiting.PushBack(tc)
	case !waiting && tc.elem != nil:
		t.waiting.Remove(tc.elem)
		tc.elem = nil
	}
}

// connState follows net/http's view of each connection. StateActive is
// set once a request's headers are in: from then on the request counts as
// in progress, except while its handler reads a body (see reading).
func (t *connTracker) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateActive:
		t.setWaiting(c, false)
	case http.StateIdle:
		t.setWaiting(c, true)
	case http.StateHijacked, http.StateClosed:
		t.mu.Lock()
		if tc := t.conns[c]; tc != nil {
			t.remove(tc)
		}
		t.mu.Unlock()
	}
}

// open is how many connections are held.
func (t *connTracker) open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

type connKey struct{}

// reading marks the request's connection as an eviction candidate while
// its handler reads the body, and returns the function that ends that.
func (t *connTracker) reading(ctx context.Context) (done func()) {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	if c == nil {
		return func() {}
	}
	t.setWaiting(c, true)
	return func() { t.setWaiting(c, false) }
}

// limitListener admits accepted connections through the tracker; the
// refused get a busy answer from a bounded set of goroutines.
type limitListener struct {
	net.Listener
	t       *connTracker
	refuser chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.t.admit(c) {
			return c, nil
		}
		select {
		case l.refuser <- struct{}{}:
			go func() {
				defer func() { <-l.refuser }()
				answerAndClose(c, busyReply())
			}()
		default:
			c.Close()
		}
	}
}
