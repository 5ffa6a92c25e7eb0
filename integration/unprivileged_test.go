package integration

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
)

// TestUnprivilegedHostRunsJobsWithoutHardLimits: a supervisor without
// root (so without cgroups) still runs jobs that ask for no hard limit,
// refuses a memory limit with unsupported_limit before dispatch, and
// still enforces a wall-clock limit (killing the worker, which cannot
// fork, ends it).
func TestUnprivilegedHostRunsJobsWithoutHardLimits(t *testing.T) {
	requireIsolation(t) // root is needed to become uid 65534
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	for p := filepath.Dir(dir); p != "/" && p != "/tmp"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	sup, worker := filepath.Join(dir, "cyber-supervisor"), filepath.Join(dir, "nox-worker")
	copyFile(t, supervisorBin, sup)
	copyFile(t, workerBin, worker)
	home := filepath.Join(dir, "home")
	os.Mkdir(home, 0o700)
	os.Chown(home, 65534, 65534)
	prog := writeProgram(t, dir, "add.nox", "[5 [[0 2] [0 6]]]")
	run := func(args ...string) (protocol.Envelope, int) {
		t.Helper()
		cmd := exec.Command(sup, append([]string{"--home", home, "run", prog, "--worker", worker, "--format", "json", "--input-values", "3,5"}, args...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, _ := cmd.Output()
		var env protocol.Envelope
		if err := json.Unmarshal(out, &env); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		return env, cmd.ProcessState.ExitCode()
	}
	env, code := run("--op", "prove")
	if !env.OK || code != 0 {
		t.Fatalf("job without hard limits: exit %d %+v", code, env.Error)
	}
	res, err := protocol.ParseResult(env.Result)
	if err != nil || res.Output[0] != 8 {
		t.Fatalf("result %s: %v", env.Result, err)
	}
	env, code = run("--memory", "64MiB")
	if env.OK || env.Error.Code != protocol.CodeUnsupportedLimit || code != 3 {
		t.Fatalf("--memory without cgroups: exit %d %+v", code, env.Error)
	}
	if env, code = run("--time", "5s"); !env.OK || code != 0 {
		t.Fatalf("--time without cgroups: exit %d %+v", code, env.Error)
	}
	// The warning says each reason once, with the capabilities it is
	// the reason of, and no JSON key.
	warn := exec.Command(sup, "--home", home, "run", prog, "--worker", worker, "--input-values", "3,5")
	warn.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var warning bytes.Buffer
	warn.Stderr = &warning
	if err := warn.Run(); err != nil || !strings.Contains(warning.String(), "workers run without isolation on this host") ||
		strings.Count(warning.String(), "no usable cgroups") > 1 || strings.Contains(warning.String(), "reasons.") {
		t.Fatalf("the unprivileged host's warning: %v\n%s", err, warning.String())
	}
	// --isolation required says, in words, what the host lacks.
	// It is unsupported_limit (exit 3, not retryable): the host decides.
	env, code = run("--isolation", "required")
	if env.OK || code != 3 || env.Error.Code != protocol.CodeUnsupportedLimit || env.Error.Retryable || !strings.Contains(env.Error.Message, "isolation unavailable on this host: the jail needs root and pid/mount/net/ipc/uts namespaces: this process is not root (uid 65534)") ||
		strings.Contains(env.Error.Message, " false") {
		t.Fatalf("--isolation required without root: %+v", env.Error)
	}
	spin := writeProgram(t, dir, "spin.nox", program(t, "spin.nox"))
	cmd := exec.Command(sup, "--home", home, "run", spin, "--worker", worker, "--format", "json", "--input-values", "60",
		"--budget", "1152921504606846976", "--time", "1s")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ := cmd.Output()
	if err := json.Unmarshal(out, &env); err != nil || env.OK || env.Error.Code != protocol.CodeDeadlineExceeded {
		t.Fatalf("deadline without cgroups: %s %v", out, err)
	}
	// Cancellation too: SIGINT on run cancels the job, exit 130.
	cmd = exec.Command(sup, "--home", home, "run", spin, "--worker", worker, "--format", "json", "--input-values", "60",
		"--budget", "1152921504606846976")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the job is running by now; a cancel before it runs ends the same way
	cmd.Process.Signal(syscall.SIGINT)
	werr := cmd.Wait()
	// (A signal before the job was submitted is interrupted: nothing ran.)
	if err := json.Unmarshal(stdout.Bytes(), &env); err != nil || env.Error == nil ||
		(env.Error.Code != protocol.CodeCancelled && env.Error.Code != "interrupted") || cmd.ProcessState.ExitCode() != 130 {
		t.Fatalf("cancel without cgroups: %v %v %s", werr, err, stdout.Bytes())
	}
	// capabilities says what this mode enforces, and how: the deadline
	// and the cancel's kill are the worker's process group's, not a PID
	// namespace's PID 1 (there is none).
	serve := exec.Command(sup, "--home", home, "serve", "--worker", worker, "--log-level", "error")
	serve.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var serveLog bytes.Buffer
	serve.Stderr = &serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
	}()
	for deadline := time.Now().Add(20 * time.Second); !socketAnswers(supervisor.SocketPath(home)); {
		if time.Now().After(deadline) {
			t.Fatalf("the unprivileged daemon did not come up\n%s", serveLog.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	env = cliJSON(t, 0, "--home", home, "capabilities")
	var caps struct {
		Capabilities struct {
			Limits struct {
				WallTime     bool `json:"wall_time"`
				Cancellation bool `json:"cancellation"`
				Memory       bool `json:"memory"`
				Pids         bool `json:"pids"`
			} `json:"limits"`
		} `json:"capabilities"`
		Host struct {
			Isolation string `json:"isolation"`
			Probe     struct {
				WallClock bool              `json:"wall_clock"`
				TreeKill  bool              `json:"tree_kill"`
				Reasons   map[string]string `json:"reasons"`
			} `json:"probe"`
		} `json:"host"`
	}
	if err := json.Unmarshal(env.Result, &caps); err != nil {
		t.Fatalf("capabilities %s: %v", env.Result, err)
	}
	lim, probe := caps.Capabilities.Limits, caps.Host.Probe
	if caps.Host.Isolation != "unisolated" || !lim.WallTime || !lim.Cancellation || lim.Memory || lim.Pids || probe.TreeKill || !probe.WallClock {
		t.Errorf("capabilities without cgroups: %s", env.Result)
	}
	if why := probe.Reasons["wall_clock"]; !strings.Contains(why, "process group") || strings.Contains(why, "PID namespace") {
		t.Errorf("reasons.wall_clock %q: not how this mode enforces a deadline", why)
	}
	// The human form says the same in words: what is enforced, and why
	// the rest is not.
	r := cli(t, "--home", home, "capabilities")
	for _, want := range []string{"isolation     unisolated", "(not usable)", "deadline kill of the worker's process and process group", "wall time, cancellation", "not enforced  memory: ", "processes: "} {
		if r.code != 0 || !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "{") {
			t.Errorf("human capabilities without cgroups lack %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	// A reason that points to another by its JSON key says that one
	// instead: a person cannot follow "(see reasons.cgroups)".
	if strings.Contains(r.stdout, "see reasons.") || !strings.Contains(r.stdout, "(cgroups: ") {
		t.Errorf("human capabilities without cgroups point to a JSON key:\n%s", r.stdout)
	}
	// A CPU quota this host cannot hold is not said to be possible.
	if !strings.Contains(r.stdout, "\n              cpu quota: ") || strings.Contains(r.stdout, "(possible, none set)") {
		t.Errorf("human capabilities without cgroups say the cpu quota wrong:\n%s", r.stdout)
	}
}

// socketAnswers reports whether a daemon accepts connections on sock.
func socketAnswers(sock string) bool {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
