package main

import (
	"context"
	"runtime"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// runProcs raises GOMAXPROCS when the first job starts. The supervisor
// starts workers with GOMAXPROCS=1: an idle second P spins at every wakeup
// of go-plugin's goroutines during start and handshake, ~2.5 ms of CPU per
// worker. But with one P, a job's VM loop holds it, and the gRPC goroutine
// that receives a cancel waits for the runtime's netpoller and preemption
// (31-66 ms measured under load, against 4-10 ms with two Ps), while the
// contract wants the acknowledgement within 100 ms. So the job runs with
// a second P: one computes, the other answers.
type runProcs struct {
	protocol.Service
	procs int
	once  sync.Once
}

func withRunProcs(svc protocol.Service) protocol.Service {
	return &runProcs{Service: svc, procs: min(2, runtime.NumCPU())}
}

func (r *runProcs) Run(ctx context.Context, req protocol.RunRequest) (protocol.Result, error) {
	r.once.Do(func() {
		if runtime.GOMAXPROCS(0) < r.procs {
			runtime.GOMAXPROCS(r.procs)
		}
	})
	return r.Service.Run(ctx, req)
}
