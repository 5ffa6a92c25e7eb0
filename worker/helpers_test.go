package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// The example programs (examples/*.nox), by name.
const (
	addNox = "[5 [[0 2] [0 6]]]"
	invNox = "[8 [0 2]]"
)

func example(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func newWorker(t testing.TB, cfg Config) *Worker {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func wrap(t testing.TB, src string) []byte {
	t.Helper()
	b, err := protocol.WrapNox("prog.nox", []byte(src))
	if err != nil {
		t.Fatalf("wrap %q: %v", src, err)
	}
	return b
}

// job is a job spec under construction.
type job struct{ protocol.JobSpec }

func newJob(t testing.TB, op protocol.Operation, src string, inputs []uint64, budget uint64) *job {
	return &job{protocol.JobSpec{
		Contract:  protocol.ContractV1,
		JobID:     "job-1",
		Operation: op,
		Profile:   protocol.ProfilePublicTrace,
		Program:   protocol.ProgramSpec{Bundle: wrap(t, src)},
		Inputs:    inputs,
		Limits:    protocol.Limits{Reductions: budget},
	}}
}

func (j *job) bytes(t testing.TB) []byte {
	t.Helper()
	b, err := j.JobSpec.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// run runs a job spec's bytes on w with a fresh work directory and
// returns the result, the error and the work directory.
func runSpec(t testing.TB, w *Worker, spec []byte) (protocol.Result, string, error) {
	t.Helper()
	dir := t.TempDir()
	res, err := w.Run(context.Background(), protocol.RunRequest{JobSpec: spec, Attempt: 1, WorkDir: dir})
	return res, dir, err
}

func wantCode(t testing.TB, err error, code protocol.Code, fragment string) {
	t.Helper()
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want *protocol.Error with %s", err, err, code)
	}
	if pe.Code != code {
		t.Fatalf("code %s (%s), want %s", pe.Code, pe.Message, code)
	}
	if fragment != "" && !strings.Contains(pe.Message, fragment) {
		t.Fatalf("message %q lacks %q", pe.Message, fragment)
	}
	if pe.Retryable != code.Retryable() {
		t.Fatalf("%s: retryable %v", code, pe.Retryable)
	}
}

// dirNames lists a directory, hidden entries included.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
