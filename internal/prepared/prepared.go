// Package prepared holds one value made in the background ahead of its
// first use, for that use to take: the network namespace and the cgroup
// layout a one-shot run makes before main. It depends on sync alone, so
// the packages that use it can still be initialised early.
package prepared

import "sync"

// Value is one value being made, or none. The zero Value holds none.
type Value[T any] struct {
	mu sync.Mutex
	ch chan T // nil: none started, or taken
}

// Start runs build in the background unless a value is already being
// made, or made and not taken.
func (v *Value[T]) Start(build func() T) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ch != nil {
		return
	}
	ch := make(chan T, 1)
	v.ch = ch
	go func() { ch <- build() }()
}

// Take returns the value Start made, waiting for it if it is still being
// made; ok is false when none was started, or it was taken already.
func (v *Value[T]) Take() (val T, ok bool) {
	v.mu.Lock()
	ch := v.ch
	v.ch = nil
	v.mu.Unlock()
	if ch == nil {
		return val, false
	}
	return <-ch, true
}

// Pending reports whether a value was started and not taken yet.
func (v *Value[T]) Pending() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.ch != nil
}
