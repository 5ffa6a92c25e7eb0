package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// A signal that comes while run is still opening its home (before the
// job is submitted; the context here is cancelled from the start) ends
// run as interrupted, exit 130, with nothing stored: the same job id then
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
	if code := execute(ctx, append(args, "--input-values", "3,5"), strings.NewReader(""), &stdout, &stderr); code != protocol.ExitCancelled ||
		!strings.Contains(stderr.String(), "interrupted: by a signal before the job was submitted: nothing was started") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	r := cli(t, append(args, "--input-values", "4,5")...)
	if r.code != 0 || r.stdout != "9\n" {
		t.Fatalf("the id after the interrupted run: %+v", r)
	}
}

// A stop asked for while serve opens and recovers its home (in process,
// the context cancelled from the start, as above) dispatches nothing:
// the job the last boot left queued keeps all its attempts for the next
// start. serve started the scheduler all the same and then interrupted
// what it had dispatched: the job paid its only attempt and ended
// cancelled without having run, where a crash at the same moment left
// it queued.
func TestServeStopDuringStartDispatchesNothing(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	body, err := os.ReadFile(filepath.Join(repoRoot, "integration", "testdata", "spin.nox"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.TrimSpace(string(body))
	spin := writeFile(t, dir, "spin.nox", "[2 [[3 [[1 "+f+"] [0 2]]] [1 "+f+"]]]")
	d := serveBin(t, home)
	if r := cli(t, "--home", home, "submit", "--job-id", "busy", spin, "--input-values", "60", "--budget", "1152921504606846976"); r.code != 0 {
		t.Fatalf("submit busy: %+v", r)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if env := jsonRun(t, 0, "--home", home, "status", "busy"); strings.Contains(string(env.Result), `"state":"running"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("busy never ran")
		}
	}
	if r := cli(t, "--home", home, "submit", "--job-id", "left", writeFile(t, dir, "add.nox", add), "--input-values", "3,5"); r.code != 0 {
		t.Fatalf("submit left: %+v", r)
	}
	d.Process.Kill() // the slot's job becomes unknown at the next start; left stays queued

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	args := []string{"--home", home, "serve", "--isolation", "off", "--slots", "1", "--worker", filepath.Join(binDir, "nox-worker")}
	if code := execute(ctx, args, strings.NewReader(""), &stdout, &stderr); code != protocol.ExitOK {
		t.Fatalf("serve: exit %d\n%s", code, stderr.String())
	}
	if _, err := os.Lstat(supervisor.SocketPath(home)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the socket of a serve stopped during its start is left: %v", err)
	}
	off, err := supervisor.OpenOffline(context.Background(), home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close(context.Background())
	st, err := off.Status(context.Background(), "left")
	if err != nil {
		t.Fatal(err)
	}
	if st.Job.State != lifecycle.Queued || len(st.Attempts) != 0 {
		t.Fatalf("left: %s with %d attempt(s), want queued with none\n%s", st.Job.State, len(st.Attempts), stderr.String())
	}
}
