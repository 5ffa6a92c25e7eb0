package supervisor

import (
	"testing"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

func woken(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// An end-only waiter sleeps through steps named as not terminal and wakes
// at a terminal state, at a change not named, and at a gap; every other
// waiter wakes at each change. Nothing stays registered once woken.
func TestNotifierEndOnlyWaiters(t *testing.T) {
	var n notifier
	for _, wake := range []func(){
		func() { n.notifyState("j", lifecycle.Accepted) },
		func() { n.notifyState("j", lifecycle.Unknown) },
		func() { n.notify("j") },
		func() { n.notifyAll() },
	} {
		end, any := n.watchEnd("j"), n.watch("j")
		other := n.watchEnd("k")
		for _, st := range []lifecycle.State{lifecycle.Running, lifecycle.Produced, lifecycle.Verified} {
			n.notifyState("j", st)
			if woken(end) {
				t.Fatalf("the end-only waiter woke at %s", st)
			}
			if !woken(any) {
				t.Fatalf("a waiter slept through %s", st)
			}
			any = n.watch("j")
		}
		wake()
		if !woken(end) || !woken(any) {
			t.Fatal("a waiter slept through the end")
		}
		if n.waiters["j"] != nil {
			t.Fatalf("left registered: %+v", n.waiters["j"])
		}
		if woken(other) != (n.waiters == nil) {
			t.Fatal("another job's waiter woke")
		}
		n.unwatch("k", other)
	}
}
