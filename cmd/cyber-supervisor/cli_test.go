package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func envelope(t *testing.T, out string) protocol.Envelope {
	t.Helper()
	var env protocol.Envelope
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("not one JSON envelope: %q: %v", out, err)
	}
	if env.Schema != protocol.EnvelopeSchema || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("envelope %q", out)
	}
	return env
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"run"}, {"--home"}, {"status"}, {"list", "extra"}} {
		if _, _, code := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	if out, _, code := runCLI(t, "help"); code != exitOK || !strings.Contains(out, "serve") {
		t.Errorf("help: exit %d %q", code, out)
	}
}

// Bad input is refused before anything starts: no worker, no store.
func TestBadInputGetsItsCode(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "add.nox")
	os.WriteFile(prog, []byte("[5 [[0 2] [0 6]]]"), 0o644)
	home := filepath.Join(dir, "home")
	cases := []struct {
		args []string
		code protocol.Code
	}{
		{[]string{"run", prog, "--input-values", "18446744069414584321"}, protocol.CodeInvalidJob},
		{[]string{"run", prog, "--input-values", "01"}, protocol.CodeInvalidJob},
		{[]string{"run", filepath.Join(dir, "missing.nox")}, protocol.CodeInvalidJob},
		{[]string{"run", dir}, protocol.CodeInvalidJob},
		{[]string{"run", prog, "--memory", "lots"}, protocol.CodeInvalidJob},
		{[]string{"run", prog, "--input-values", "1", "--input-file", prog}, protocol.CodeInvalidJob},
	}
	for _, c := range cases {
		out, _, code := runCLI(t, append([]string{"--home", home}, append(c.args, "--format", "json")...)...)
		env := envelope(t, out)
		if env.OK || env.Error == nil || env.Error.Code != c.code || code != protocol.ExitCode(c.code) {
			t.Errorf("%v: exit %d %+v, want %s", c.args, code, env.Error, c.code)
		}
	}
	if _, err := os.Stat(home); err == nil {
		t.Error("refused input created the home")
	}
}

func TestNoDaemonIsUnavailable(t *testing.T) {
	home := t.TempDir()
	out, _, code := runCLI(t, "--home", home, "list", "--format", "json")
	env := envelope(t, out)
	if code != exitBusy || env.Error == nil || env.Error.Code != "busy" {
		t.Fatalf("exit %d %+v", code, env.Error)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]uint64{"64MiB": 64 << 20, "512KiB": 512 << 10, "1GiB": 1 << 30, "1000": 1000, "10MB": 10e6, "7B": 7} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1MiB", "1.5MiB", "MiB", "99999999999999999999GiB"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) accepted", in)
		}
	}
}

// serve's API limits are validated before anything starts: no home, no
// store, no cgroup.
func TestServeRefusesBadAPILimits(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	for _, args := range [][]string{
		{"--api-max-conns", "-1"}, {"--api-max-conns", "100000000"}, {"--api-header-timeout", "-1s"},
		{"--api-body-timeout", "2h"}, {"--api-idle-timeout", "1ns"}, {"--api-write-timeout", "-5m"},
	} {
		_, errOut, code := runCLI(t, append([]string{"--home", home, "serve"}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "invalid API configuration") {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
	if _, err := os.Stat(home); err == nil {
		t.Error("a refused configuration created the home")
	}
}
