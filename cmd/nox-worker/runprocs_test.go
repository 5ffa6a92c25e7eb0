package main

import (
	"context"
	"runtime"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

type procsSeen struct {
	protocol.Service
	during int
}

func (p *procsSeen) Run(context.Context, protocol.RunRequest) (protocol.Result, error) {
	p.during = runtime.GOMAXPROCS(0)
	return protocol.Result{}, nil
}

// TestRunRaisesProcs: a worker started with one P runs its job with two
// (where the machine has two), so a cancel is read while the VM computes.
func TestRunRaisesProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	seen := &procsSeen{}
	if _, err := withRunProcs(seen).Run(context.Background(), protocol.RunRequest{}); err != nil {
		t.Fatal(err)
	}
	if want := min(2, runtime.NumCPU()); seen.during != want {
		t.Errorf("GOMAXPROCS during the run = %d, want %d", seen.during, want)
	}
}
