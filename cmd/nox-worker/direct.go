package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/worker"
)

// humanFn prints a successful command's human output.
type humanFn func(stdout, stderr io.Writer)

// command is one direct command: it returns the JSON result and the human
// printer of its success, or an error.
type command func(ctx context.Context, w *worker.Worker, o *options, pos []string) (any, humanFn, error)

var commands = map[string]command{
	"describe": cmdDescribe,
	"run":      cmdRun,
	"prove":    cmdProve,
	"verify":   cmdVerify,
}

// runDirect parses a direct command's arguments, runs it on an in-process
// worker configured as the plugin would be, and reports the outcome in the
// requested format with the exit code of DESIGN.md §5.
func runDirect(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) int {
	o, pos, err := parseOptions(cmd, args, stdout)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	jsonOut := o.format == "json"
	if err != nil {
		// The format flag may be what failed to parse; look for it
		// directly so that a program still gets its envelope.
		jsonOut = wantsJSON(args)
	}
	var (
		result any
		human  humanFn
	)
	if err == nil {
		// The ids come from the same environment as the plugin's, so that
		// describe shows what a supervisor would see; the work root does
		// not apply: direct commands choose their own work directories.
		cfg := configFromEnv(os.Getenv)
		cfg.WorkRoot = ""
		var w *worker.Worker
		if w, err = worker.New(cfg); err != nil {
			err = protocol.Errorf(protocol.CodeInternalError, "worker configuration: %v", err)
		} else {
			result, human, err = commands[cmd](ctx, w, o, pos)
		}
	}
	return report(cmd, jsonOut, result, human, err, stdout, stderr)
}

func report(cmd string, jsonOut bool, result any, human humanFn, err error, stdout, stderr io.Writer) int {
	if jsonOut {
		code, werr := protocol.WriteEnvelope(stdout, cmd, result, err)
		if werr != nil {
			fmt.Fprintf(stderr, "nox-worker %s: writing the result: %v\n", cmd, werr)
			return exitFailed
		}
		return code
	}
	if err != nil {
		pe := protocol.AsError(err)
		if cmd == "verify" {
			fmt.Fprintf(stderr, "Verification: FAIL (%s: %s)\n", pe.Code, pe.Message)
		} else {
			fmt.Fprintf(stderr, "nox-worker %s: %s: %s\n", cmd, pe.Code, pe.Message)
		}
		if pe.Code == protocol.CodeInvalidJob {
			fmt.Fprintf(stderr, "(nox-worker %s --help shows the usage)\n", cmd)
		}
		return protocol.ExitCode(pe.Code)
	}
	human(stdout, stderr)
	return exitOK
}

// usageError is a command-line mistake: invalid_job, exit 2.
func usageError(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeInvalidJob, format, args...)
}

func onePositional(cmd, what string, pos []string) (string, error) {
	if len(pos) != 1 {
		return "", usageError("%s takes exactly one %s, got %d arguments", cmd, what, len(pos))
	}
	return pos[0], nil
}

func checkBudget(b uint64) error {
	if b == 0 || b >= field.P {
		return usageError("--budget must be above 0 and below p")
	}
	return nil
}

// cliJob is the job a direct command runs: the same spec a supervisor
// would send, in the given profile.
func cliJob(op protocol.Operation, profile string, bundle []byte, inputs []uint64, budget uint64) protocol.JobSpec {
	return protocol.JobSpec{
		Contract:  protocol.ContractV1,
		JobID:     "nox-worker-" + string(op),
		Operation: op,
		Profile:   profile,
		Program:   protocol.ProgramSpec{Bundle: bundle},
		Inputs:    inputs,
		Limits:    protocol.Limits{Reductions: budget},
	}
}

// runJob marshals spec and runs it through Worker.Run, exactly as the
// plugin glue hands a supervisor's job to the worker.
func runJob(ctx context.Context, w *worker.Worker, spec protocol.JobSpec, workDir string) (protocol.Result, error) {
	b, err := spec.MarshalJSON()
	if err != nil {
		return protocol.Result{}, protocol.Errorf(protocol.CodeInternalError, "encoding the job")
	}
	res, err := w.Run(ctx, protocol.RunRequest{JobSpec: b, Attempt: 1, WorkDir: workDir})
	// Said as cyber-supervisor says it: a program that reads an input
	// that was not given fails with an AxisError.
	if pe := (*protocol.Error)(nil); errors.As(err, &pe) && pe.Code == protocol.CodeExecutionFailed {
		explained := *pe
		protocol.ExplainAxisError(&explained, len(spec.Inputs))
		err = &explained
	}
	return res, err
}

// scratchDir is the work directory of runs that publish nothing (execute
// and verify never touch it, but a run request always names one).
func scratchDir() string {
	d, err := filepath.Abs(os.TempDir())
	if err != nil {
		return "/tmp"
	}
	return d
}
