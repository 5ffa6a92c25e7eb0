package workerids

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	p, err := NewShared(Range{First: 100000, Count: 3}, filepath.Join(t.TempDir(), "ids.lock"))
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

// TestSharedLeaseAcrossPools: two pools on one lease file (two
// supervisors of a host) never hold one id at once; a released id is the
// other's to take.
func TestSharedLeaseAcrossPools(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ids.lock")
	r := Range{First: 100000, Count: 3}
	a, err := NewShared(r, file)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewShared(r, file)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	first, err := a.Take()
	if err != nil {
		t.Fatal(err)
	}
	held := map[uint32]string{first: "a"}
	for range 2 {
		id, err := b.Take()
		if err != nil {
			t.Fatal(err)
		}
		if held[id] != "" {
			t.Fatalf("id %d handed out by b while %s has it", id, held[id])
		}
		held[id] = "b"
	}
	if id, err := a.Take(); !errors.Is(err, ErrExhausted) {
		t.Fatalf("a took %d (%v) with every id held", id, err)
	}
	a.Release(first)
	if id, err := b.Take(); err != nil || id != first {
		t.Fatalf("b after a's release: %d %v, want %d", id, err, first)
	}
}

// envLeaseHelper makes the test binary a supervisor that takes one id
// from the lease file it names, says so and waits to be killed.
const envLeaseHelper = "WORKERIDS_TEST_LEASE_FILE"

func TestMain(m *testing.M) {
	if file := os.Getenv(envLeaseHelper); file != "" {
		p, err := NewShared(Range{First: 100000, Count: 1}, file)
		if err != nil {
			os.Exit(3)
		}
		if _, err := p.Take(); err != nil {
			os.Exit(4)
		}
		fmt.Println("leased")
		select {}
	}
	os.Exit(m.Run())
}

// TestLeaseEndsWithItsProcess: an id leased by a process that is killed
// (a crashed supervisor) is free again without anyone releasing it.
func TestLeaseEndsWithItsProcess(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ids.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envLeaseHelper+"="+file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "leased\n" {
		t.Fatalf("helper: %q %v", line, err)
	}
	p, err := NewShared(Range{First: 100000, Count: 1}, file)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if id, err := p.Take(); !errors.Is(err, ErrExhausted) {
		t.Fatalf("took %d (%v) while the helper holds it", id, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if id, err := p.Take(); err != nil || id != 100000 {
		t.Fatalf("after the helper was killed: %d %v, want 100000", id, err)
	}
}
