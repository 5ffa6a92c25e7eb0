package main

import (
	"context"
	"fmt"
	"io"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/worker"
)

// cmdRun executes INPUT: one output value per line on stdout, the cost on
// stderr.
func cmdRun(ctx context.Context, w *worker.Worker, o *options, pos []string) (any, humanFn, error) {
	in, err := onePositional("run", "INPUT", pos)
	if err != nil {
		return nil, nil, err
	}
	if err := checkBudget(o.budget); err != nil {
		return nil, nil, err
	}
	bundle, err := loadProgram(in)
	if err != nil {
		return nil, nil, err
	}
	inputs, err := loadInputs(o)
	if err != nil {
		return nil, nil, err
	}
	res, err := runJob(ctx, w, cliJob(protocol.OpExecute, protocol.ProfilePublicTrace, bundle, inputs, o.budget), scratchDir())
	if err != nil {
		return nil, nil, err
	}
	result := runJSON{
		Kind:       res.Kind,
		Output:     u64s(res.Output),
		Reductions: u64(res.Reductions),
		Budget:     u64(res.Budget),
		Profile:    res.Profile,
		Program:    programOf(res.ProgramIdentity),
		Inputs:     u64s(inputs),
		Telemetry:  telemetryJSON{WallTimeMS: u64(res.Telemetry.WallTimeMS)},
	}
	human := func(stdout, stderr io.Writer) {
		for _, v := range res.Output {
			fmt.Fprintln(stdout, v)
		}
		fmt.Fprintf(stderr, "Executed in %d reductions\n", res.Reductions)
	}
	return result, human, nil
}
