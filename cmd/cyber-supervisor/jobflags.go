package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// jobFlags are the flags that describe a job, shared by run and submit.
type jobFlags struct {
	op          string
	inputValues string
	inputFile   string
	budget      uint64
	memory      string
	wall        time.Duration
	artifact    string
	artifactCap string
	expect      string
	retries     uint
	priority    int
	jobID       string
	format      string
}

func (f *jobFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.op, "op", "execute", "operation: execute, prove or verify")
	fs.StringVar(&f.inputValues, "input-values", "", "public inputs V1,V2,... (canonical field values)")
	fs.StringVar(&f.inputFile, "input-file", "", "public inputs as a joy input file (schema v1)")
	fs.Uint64Var(&f.budget, "budget", 1_000_000, "reduction budget")
	fs.StringVar(&f.memory, "memory", "", "hard memory limit of the worker, e.g. 64MiB")
	fs.DurationVar(&f.wall, "time", 0, "wall-clock limit, e.g. 5s (the worker is killed after it)")
	fs.StringVar(&f.artifact, "artifact", "", "certificate to check (--op verify)")
	fs.StringVar(&f.artifactCap, "artifact-limit", "", "cap of the produced or checked artifact, e.g. 32MiB")
	fs.StringVar(&f.expect, "expect", "", "expected output V1,V2,... (checked against the verified result)")
	fs.UintVar(&f.retries, "retries", 0, "extra attempts after a retryable failure")
	fs.IntVar(&f.priority, "priority", 0, "higher runs first")
	fs.StringVar(&f.jobID, "job-id", "", "job id (default: generated)")
	fs.StringVar(&f.format, "format", "human", "output: human or json (the cyber/cli/v1 envelope)")
}

// Limits of local files read by the CLI.
const maxInputBytes = 64 << 20

// spec builds and encodes the job spec for INPUT (a ProgramBundle .json or
// a raw .nox formula, wrapped into a minimal bundle).
func (f *jobFlags) spec(input string) ([]byte, error) {
	bundle, err := readBundle(input)
	if err != nil {
		return nil, err
	}
	var inputs []uint64
	switch {
	case f.inputValues != "" && f.inputFile != "":
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "--input-values and --input-file exclude each other")
	case f.inputValues != "":
		if inputs, err = protocol.ParseValues(f.inputValues); err != nil {
			return nil, err
		}
	case f.inputFile != "":
		b, err := readRegular(f.inputFile, protocol.MaxInputFileBytes)
		if err != nil {
			return nil, err
		}
		if inputs, err = protocol.ParseInputFile(b); err != nil {
			return nil, err
		}
	}
	spec := protocol.JobSpec{
		Contract: protocol.ContractV1, JobID: f.jobID, Operation: protocol.Operation(f.op),
		Profile: protocol.ProfilePublicTrace, Program: protocol.ProgramSpec{Bundle: bundle},
		Inputs: inputs, Limits: protocol.Limits{Reductions: f.budget, WallTimeMS: uint64(f.wall.Milliseconds())},
	}
	if spec.JobID == "" {
		spec.JobID = newJobID()
	}
	if f.memory != "" {
		if spec.Limits.MemoryBytes, err = parseBytes(f.memory); err != nil {
			return nil, err
		}
	}
	if f.artifactCap != "" {
		if spec.Limits.ArtifactBytes, err = parseBytes(f.artifactCap); err != nil {
			return nil, err
		}
	}
	if f.expect != "" {
		if spec.ExpectedOutput, err = protocol.ParseValues(f.expect); err != nil {
			return nil, err
		}
	}
	if f.artifact != "" {
		if spec.Artifact, err = readRegular(f.artifact, protocol.MaxArtifactBytes); err != nil {
			return nil, err
		}
	}
	return spec.MarshalJSON()
}

func (f *jobFlags) retryPolicy() *store.RetryPolicy {
	return &store.RetryPolicy{MaxAttempts: uint32(f.retries) + 1, Backoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second}
}

func readBundle(input string) ([]byte, error) {
	b, err := readRegular(input, maxInputBytes)
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(filepath.Ext(input), ".json") {
		return b, nil
	}
	name := strings.TrimSuffix(filepath.Base(input), filepath.Ext(input))
	return protocol.WrapNox(name, b)
}

// readRegular reads a regular file (no directories, devices or FIFOs),
// bounded; errors never echo contents.
func readRegular(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "open %s: %v", path, errNoPath(err))
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "%s is not a regular file", path)
	}
	if st.Size() > limit {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "%s is larger than %d bytes", path, limit)
	}
	b, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeIOError, "read %s: %v", path, errNoPath(err))
	}
	if int64(len(b)) > limit {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "%s is larger than %d bytes", path, limit)
	}
	return b, nil
}

func errNoPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func newJobID() string {
	var b [8]byte
	rand.Read(b[:])
	return "job-" + hex.EncodeToString(b[:])
}

// parseBytes reads 64MiB, 512KiB, 1GiB, 1000 (bytes), 10MB.
func parseBytes(s string) (uint64, error) {
	units := []struct {
		suffix string
		mult   uint64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mult := s, uint64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseUint(strings.TrimSpace(num), 10, 64)
	if err != nil || v == 0 || v > (1<<62)/mult {
		return 0, protocol.Errorf(protocol.CodeInvalidJob, "size %q: want a positive number with an optional unit (KiB, MiB, GiB)", s)
	}
	return v * mult, nil
}

func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, bool) {
	fs.SetOutput(stderr)
	// Allow flags after positional arguments: INPUT --op prove ...
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, false
		}
		if fs.NArg() == 0 {
			return pos, true
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func usageErr(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "cyber-supervisor: "+format+"\n", args...)
	return exitUsage
}
