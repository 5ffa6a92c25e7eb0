package workerids

import (
	"errors"
	"testing"
)

func TestRangeValidate(t *testing.T) {
	if err := DefaultRange.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []Range{{First: 1000, Count: 0}, {First: 0, Count: 10}, {First: 65000, Count: 1000},
		{First: 1<<32 - 10, Count: 10}, {First: 1<<32 - 1, Count: 2}} {
		if r.Validate() == nil {
			t.Errorf("range %+v accepted", r)
		}
	}
}

func TestPoolNeverHandsOutALiveID(t *testing.T) {
	p, err := New(Range{First: 100000, Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]bool{}
	for range 3 {
		id, err := p.Take()
		if err != nil || seen[id] || id < 100000 || id > 100002 {
			t.Fatalf("take: %d %v (seen %v)", id, err, seen)
		}
		seen[id] = true
	}
	if _, err := p.Take(); !errors.Is(err, ErrExhausted) {
		t.Fatalf("fourth take: %v, want ErrExhausted", err)
	}
	p.Release(100001)
	if id, err := p.Take(); err != nil || id != 100001 {
		t.Fatalf("after release: %d %v, want 100001", id, err)
	}
	p.Release(100000)
	p.Release(100002)
	// Round robin: the next id after the last one handed out comes first.
	if id, _ := p.Take(); id != 100002 {
		t.Errorf("take after releases: %d, want 100002 (least recently used)", id)
	}
	if p.InUse() != 2 {
		t.Errorf("in use %d, want 2", p.InUse())
	}
}
