package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// BenchmarkWorkerProcess is the whole life of one worker process, as the
// supervisor has one per attempt, without the sandbox: the real nox-worker
// binary started by go-plugin's client, one trivial execute job, go-plugin's
// Kill (controller Shutdown, then the process exits by itself). It reports
// the CPU the worker processes used (user + system, from the children's
// rusage), which is what a faster start or a lighter server saves.
func BenchmarkWorkerProcess(b *testing.B) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	bin := filepath.Join(b.TempDir(), "nox-worker")
	if err := testbin.BuildPure(root, "./cmd/nox-worker", bin); err != nil {
		b.Fatal(err)
	}
	spec := specBytes(b, protocol.JobSpec{
		Contract: protocol.ContractV1, JobID: "bench", Operation: protocol.OpExecute,
		Profile: protocol.ProfilePublicTrace, Program: protocol.ProgramSpec{Bundle: mustWrapB(b, "[5 [[0 2] [0 6]]]")},
		Inputs: []uint64{3, 5}, Limits: protocol.Limits{Reductions: 100},
	})
	work := b.TempDir()
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin)
		cmd.Env = []string{"GOMAXPROCS=1"}
		pc, c := dispense(b, cmd)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, err := c.Start(ctx, protocol.RunRequest{JobSpec: spec, Attempt: 1, WorkDir: work})
		if err == nil {
			_, err = r.Wait(ctx)
		}
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		pc.Kill()
		if !pc.Exited() {
			b.Fatal("the worker did not exit after Kill")
		}
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "worker-cpu-ms/op")
}

func mustWrapB(b *testing.B, src string) []byte {
	w, err := protocol.WrapNox("bench.nox", []byte(src))
	if err != nil {
		b.Fatal(err)
	}
	return w
}
