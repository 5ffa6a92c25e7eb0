// Command launchfloor is a measurement, not a product: the one-shot run's
// launch path alone, for BenchmarkOneShotFloor (integration/). It makes
// the production launcher (launch.New: the host cache, the
// cgroups, the gated jail), launches one worker through go-plugin, runs
// one execute job on it and prints the output, with nothing else a
// `cyber-supervisor run` does: no command line, no store and no durable
// commit, no verification, no etcd client or API server linked. What it
// takes is the least any run through this launch path can take.
//
//	launchfloor                               start and exit only
//	launchfloor HOME WORKER PROGRAM CGROUP    one job: PROGRAM on inputs 3 and 5
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
)

func main() {
	if len(os.Args) == 1 {
		return
	}
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: launchfloor [HOME WORKER PROGRAM CGROUP]")
		os.Exit(2)
	}
	out, err := runOne(context.Background(), os.Args[1], os.Args[2], os.Args[3], os.Args[4])
	if err != nil {
		fmt.Fprintln(os.Stderr, "launchfloor:", err)
		os.Exit(1)
	}
	for _, v := range out {
		fmt.Println(v)
	}
}

// runOne launches one isolated worker and runs PROGRAM on it, the way a
// one-shot run's attempt does.
func runOne(ctx context.Context, home, worker, program, cgroup string) ([]uint64, error) {
	bundle, err := protocol.ReadProgram(program)
	if err != nil {
		return nil, err
	}
	spec := protocol.JobSpec{Contract: protocol.ContractV1, JobID: "job-launchfloor", Operation: protocol.OpExecute,
		Profile: protocol.ProfilePublicTrace, Program: protocol.ProgramSpec{Bundle: bundle},
		Inputs: []uint64{3, 5}, Limits: protocol.Limits{Reductions: 1 << 20}}
	specJSON, err := spec.MarshalJSON()
	if err != nil {
		return nil, err
	}
	l, err := launch.New(ctx, launch.Config{WorkerPath: worker, Home: home,
		Isolation: launch.IsolationRequired, CgroupName: cgroup})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	w, err := l.Launch(ctx, launch.Request{Job: spec.JobID, Attempt: 1, Limits: spec.Limits})
	if err != nil {
		return nil, err
	}
	defer w.Close(ctx)
	run, err := w.Start(ctx, protocol.RunRequest{JobSpec: specJSON, Attempt: 1, WorkDir: w.WorkDir()})
	if err != nil {
		return nil, err
	}
	res, err := run.Wait(ctx)
	if err != nil {
		return nil, err
	}
	return res.Output, nil
}
