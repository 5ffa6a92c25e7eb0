package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
