package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A signal that comes while run is still opening its home (before the
// job is submitted; the context here is cancelled from the start) ends
// run as cancelled, exit 130, with nothing stored: the same job id then
// takes another payload. It was internal_error ("context canceled"),
// exit 1. In process: this is the one moment a signal cannot be aimed at
// from outside; the home, store, launcher and worker are the real ones.
func TestRunSignalBeforeSubmission(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	prog := filepath.Join(t.TempDir(), "add.nox")
	if err := os.WriteFile(prog, []byte("[5 [[0 2] [0 6]]]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--home", home, "run", prog, "--worker", filepath.Join(binDir, "nox-worker"), "--isolation", "off", "--job-id", "early"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	if code := execute(ctx, append(args, "--input-values", "3,5"), strings.NewReader(""), &stdout, &stderr); code != exitCancelled ||
		!strings.Contains(stderr.String(), "cancelled: interrupted (signal) before the job was submitted") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	r := cli(t, append(args, "--input-values", "4,5")...)
	if r.code != 0 || r.stdout != "9\n" {
		t.Fatalf("the id after the interrupted run: %+v", r)
	}
}
