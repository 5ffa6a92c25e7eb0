package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
)

// The direct commands as a person runs them: the built binary.

type binRun struct {
	stdout, stderr string
	code           int
}

func runBinary(t *testing.T, args ...string) binRun {
	t.Helper()
	out, errb, code, err := testbin.Capture(exec.Command(workerBinary(t), args...))
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return binRun{out, errb, code}
}

// Every command's help, asked for with -h, --help or help CMD, is printed
// on stdout with exit 0; a help topic that is no command is a usage error.
func TestBinaryHelpOnStdout(t *testing.T) {
	for _, cmd := range []string{"run", "prove", "verify", "describe", "eval"} {
		for _, args := range [][]string{{cmd, "-h"}, {cmd, "--help"}, {"help", cmd}} {
			r := runBinary(t, args...)
			if r.code != exitOK || !strings.HasPrefix(r.stdout, "usage: nox-worker "+cmd) || r.stderr != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
			}
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		if r := runBinary(t, args...); r.code != exitOK || !strings.HasPrefix(r.stdout, "usage: nox-worker COMMAND") {
			t.Errorf("%v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
	for _, args := range [][]string{{"help", "frobnicate"}, {"help", "run", "extra"}} {
		if r := runBinary(t, args...); r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "unknown help topic") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	// A mistake is still reported on stderr, with the usage.
	if r := runBinary(t, "eval", "--bogus"); r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "usage: nox-worker eval") {
		t.Errorf("eval --bogus: %+v", r)
	}
}

// With --format json, help is one cyber/cli/v1 envelope whose result is
// the text the human form prints, as every output of --format json is.
func TestBinaryHelpInJSON(t *testing.T) {
	for _, c := range []struct {
		args    []string
		command string
		human   []string
	}{
		{[]string{"run", "-h", "--format", "json"}, "run", []string{"run", "-h"}},
		{[]string{"verify", "--format=json", "--help"}, "verify", []string{"verify", "--help"}},
		{[]string{"help", "prove", "--format", "json"}, "prove", []string{"help", "prove"}},
		{[]string{"--help", "--format", "json"}, "nox-worker", []string{"--help"}},
		{[]string{"help", "--format", "json"}, "nox-worker", []string{"help"}},
	} {
		r := runBinary(t, c.args...)
		var env struct {
			Schema, Command string
			OK              bool
			Result          struct{ Help string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &env); err != nil || r.code != exitOK || strings.Count(r.stdout, "\n") != 1 {
			t.Fatalf("%v: exit %d, stdout %q: %v", c.args, r.code, r.stdout, err)
		}
		if want := runBinary(t, c.human...).stdout; env.Schema != "cyber/cli/v1" || env.Command != c.command || !env.OK || env.Result.Help != want {
			t.Errorf("%v: envelope %+v, want the help of %v", c.args, env, c.human)
		}
	}
	r := runBinary(t, "help", "frobnicate", "--format", "json")
	if r.code != exitUsage || !strings.Contains(r.stdout, `"code":"invalid_job"`) || !strings.Contains(r.stdout, "unknown help topic") {
		t.Errorf("help frobnicate --format json: %+v", r)
	}
}

// A program that reads an input the job did not give says so, as
// cyber-supervisor says it, rather than a bare "nox error AxisError".
func TestBinaryMissingInputIsExplained(t *testing.T) {
	add, _ := filepath.Abs(examplePath("add.nox"))
	cert := filepath.Join(t.TempDir(), "add.cnxt.zst")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", add}, "the job gave 0 input(s); does it read more?"},
		{[]string{"run", add, "--input-values", "3"}, "the job gave 1 input(s); does it read more?"},
		{[]string{"prove", add, "--output", cert}, "the job gave 0 input(s); does it read more?"},
	} {
		r := runBinary(t, c.args...)
		if r.code != exitFailed || !strings.Contains(r.stderr, "execution_failed: nox error AxisError (the program read a part of its subject that does not exist: "+c.want) {
			t.Errorf("%v: exit %d, stderr %q", c.args, r.code, r.stderr)
		}
		r = runBinary(t, append(c.args, "--format", "json")...)
		env := parseEnvelope(t, c.args[0], r.stdout, r.code)
		if env.Error == nil || !strings.Contains(env.Error.Message, c.want) {
			t.Errorf("%v --format json: %+v", c.args, env.Error)
		}
	}
}

// Ctrl-C (SIGINT) or SIGTERM cancels a direct run: exit 130, code
// cancelled, and the message says why once ("cancelled: cancelled" was the
// code twice).
func TestBinarySignalCancels(t *testing.T) {
	doubling, _ := filepath.Abs(examplePath("doubling.nox"))
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := exec.Command(workerBinary(t), "run", doubling, "--input-values", "200", "--budget", "18446744069414584320")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Well into the reduction (the handler is set before it starts):
		// 100 ms of CPU, which the start alone never takes.
		for deadline := time.Now().Add(time.Minute); cpuTicks(t, cmd.Process.Pid) < 10; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("the run did not get going")
			}
		}
		cmd.Process.Signal(sig)
		cmd.Wait()
		msg := strings.TrimSpace(stderr.String())
		if code := cmd.ProcessState.ExitCode(); code != exitCancelled || msg != "nox-worker run: cancelled: interrupted (signal)" {
			t.Errorf("%s: exit %d, stderr %q", sig, code, msg)
		}
	}
}

// cpuTicks is the user and system time of process pid, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's closing parenthesis: state is the
	// first (3rd of the line), utime and stime the 12th and 13th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}
