package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
)

// leftEnvelope reads a stopped command's one envelope: interrupted (exit
// 130), its result naming what it left running.
func leftEnvelope(t *testing.T, p *cliProc) map[string]any {
	t.Helper()
	if code := p.wait(t); code != exitCancelled {
		t.Fatalf("exit %d, want 130\n%s\n%s", code, p.stdout.String(), p.stderrText())
	}
	var env protocol.Envelope
	if err := json.Unmarshal(p.stdout.Bytes(), &env); err != nil || env.OK || env.Error == nil || env.Error.Code != "interrupted" {
		t.Fatalf("not an interrupted envelope: %s (%v)", p.stdout.String(), err)
	}
	var left map[string]any
	if err := json.Unmarshal(env.Result, &left); err != nil {
		t.Fatalf("result %s: %v", env.Result, err)
	}
	if strings.Contains(env.Error.Message, "cancel") && !strings.Contains(env.Error.Message, " cancel ") {
		t.Errorf("an interrupted wait says its work was cancelled: %s", env.Error.Message)
	}
	return left
}

// A command that stops waiting on a signal says so (code interrupted,
// exit 130), names what goes on (with --format json in result), and does
// not claim the work was cancelled: submit --wait names its job, invoke
// --wait its invocation, events --follow its job. submit --wait --format
// json answered error.code cancelled with the job's id only inside the
// message, and invoke --wait "cancelled" with no invocation id at all,
// while both went on.
func TestStoppedWaitingSaysWhatGoesOn(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	defer d.stop(t)

	p := startCLI(t, append([]string{"--home", home, "submit", "--wait", "--format", "json", "--job-id", "sw"}, spinArgs(t, t.TempDir())...)...)
	waitSubmitted(t, d, "sw")
	waitRunning(t, d, "sw", 1)
	awaitHeldSocket(t, p.cmd.Process.Pid)
	p.cmd.Process.Signal(syscall.SIGINT)
	if left := leftEnvelope(t, p); left["job_id"] != "sw" || left["state"] != "running" {
		t.Fatalf("submit --wait left %v", left)
	}
	p = startCLI(t, "--home", home, "events", "--follow", "--format", "json", "sw")
	awaitHeldSocket(t, p.cmd.Process.Pid)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if left := leftEnvelope(t, p); left["job_id"] != "sw" {
		t.Fatalf("events --follow left %v", left)
	}
	if st, err := d.client.Status(context.Background(), "sw"); err != nil || st.Job.State != "running" {
		t.Fatalf("sw after its followers stopped: %+v %v", st, err)
	}
	cli(t, "--home", home, "cancel", "sw")
	waitDone(t, d, "sw")

	// An invocation that waits for its act (no worker placed) is left
	// live by invoke --wait's signal, and named.
	h := func(args ...string) []string { return append([]string{"--home", home}, args...) }
	cliJSON(t, 0, h("neuron", "init", "--network", "testnet")...)
	cliJSON(t, 0, h("grant", "set", "--revision", "0", "--acts", "emit")...)
	prog := writeProgram(t, t.TempDir(), "emit.nox", fmt.Sprintf("[16 [[1 %d] [1 0]]]", hostact.TagEmit))
	id := strings.TrimSpace(cli(t, h("prog", "install", prog, "--acts", "emit")...).stdout)
	var pl struct {
		Generation string `json:"generation"`
	}
	if err := json.Unmarshal(cliJSON(t, 0, h("placement", "show")...).Result, &pl); err != nil {
		t.Fatal(err)
	}
	cliJSON(t, 0, h("placement", "release", "--generation", pl.Generation)...)
	p = startCLI(t, h("invoke", id, "--wait", "--format", "json")...)
	awaitHeldSocket(t, p.cmd.Process.Pid) // its long poll
	p.cmd.Process.Signal(syscall.SIGINT)
	left := leftEnvelope(t, p)
	inv, _ := left["invocation"].(string)
	if len(inv) != 64 {
		t.Fatalf("invoke --wait left %v", left)
	}
	var view struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(cliJSON(t, 0, h("invocation", "show", inv)...).Result, &view); err != nil || view.Status == "" || view.Status == "cancelled" {
		t.Fatalf("the invocation after invoke --wait stopped: %+v %v", view, err)
	}
	cliJSON(t, 0, h("invocation", "cancel", inv)...)
}

// result of a job cancelled earlier is exit 1 (a job that ended without a
// result), not 130, which says the command itself was interrupted; list
// --limit above one page of the API lists the newest N instead of being
// refused for "last", a parameter nobody typed.
func TestResultAndListSayTheirOwn(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	defer d.stop(t)
	submitCLI(t, home, "c", spinArgs(t, t.TempDir())...)
	cli(t, "--home", home, "cancel", "c")
	waitDone(t, d, "c")
	env := cliJSON(t, 1, "--home", home, "result", "c")
	if env.Error == nil || env.Error.Code != protocol.CodeCancelled {
		t.Fatalf("result of a cancelled job: %+v", env.Error)
	}
	env = cliJSON(t, 0, "--home", home, "list", "--limit", "20000")
	if !strings.Contains(string(env.Result), `"job_id":"c"`) {
		t.Fatalf("list --limit 20000: %s", env.Result)
	}
}

// A home the daemon cannot use is refused before anything is done in it,
// with the code that says why: a path too long for its unix socket is a
// usage error (exit 2), a read-only home or a file in its place io_error
// (exit 1). The long home ran recovery and made its store, then failed
// listening as internal_error; the others were internal_error too.
func TestUnusableHomeRefusedFirst(t *testing.T) {
	requireIsolation(t)
	base := t.TempDir()
	long := filepath.Join(base, strings.Repeat("h", 120-len(base)))
	serve := func(home string) (protocol.Envelope, int) {
		r := cli(t, "--home", home, "serve", "--worker", workerBin, "--isolation", "required", "--cgroup-name", cgroupName, "--format", "json")
		var env protocol.Envelope
		if err := json.Unmarshal([]byte(r.stdout), &env); err != nil {
			t.Fatalf("serve on %s: %+v", home, r)
		}
		return env, r.code
	}
	env, code := serve(long)
	if code != 2 || env.Error.Code != "usage" || !strings.Contains(env.Error.Message, "too long for the daemon's unix socket") {
		t.Errorf("a home too long: exit %d %+v", code, env.Error)
	}
	if _, err := os.Stat(long); !os.IsNotExist(err) {
		t.Errorf("the long home was made: %v", err)
	}

	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if env, code := serve(file); code != 1 || env.Error.Code != protocol.CodeIOError {
		t.Errorf("a file as the home: exit %d %+v", code, env.Error)
	}

	ro := filepath.Join(base, "ro")
	if err := os.MkdirAll(ro, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", ro).CombinedOutput(); err != nil {
		t.Fatalf("mount a read-only home: %v %s", err, out)
	}
	defer exec.Command("umount", ro).Run()
	for _, home := range []string{ro, filepath.Join(ro, "sub")} {
		if env, code := serve(home); code != 1 || env.Error.Code != protocol.CodeIOError || !strings.Contains(env.Error.Message, "read-only file system") {
			t.Errorf("read-only home %s: exit %d %+v", home, code, env.Error)
		}
	}
}
