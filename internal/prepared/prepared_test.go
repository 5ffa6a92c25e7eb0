package prepared

import "testing"

// TestStartTakeOnce: one value per Start until it is taken, taken once;
// a Start after the take makes a new one.
func TestStartTakeOnce(t *testing.T) {
	var v Value[int]
	if _, ok := v.Take(); ok || v.Pending() {
		t.Fatal("a value before Start")
	}
	n := 0
	build := func() int { n++; return n }
	v.Start(build)
	v.Start(build) // pending: makes nothing
	if !v.Pending() {
		t.Fatal("nothing pending after Start")
	}
	if got, ok := v.Take(); !ok || got != 1 {
		t.Fatalf("Take: %d %v, want 1 true", got, ok)
	}
	if _, ok := v.Take(); ok || v.Pending() {
		t.Fatal("a value taken twice")
	}
	v.Start(build)
	if got, ok := v.Take(); !ok || got != 2 {
		t.Fatalf("Take after a new Start: %d %v, want 2 true", got, ok)
	}
}
