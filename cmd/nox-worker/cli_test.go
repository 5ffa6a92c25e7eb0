package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// envelope is the cyber/cli/v1 object, read strictly enough to check it.
type envelope struct {
	Schema  string          `json:"schema"`
	Command string          `json:"command"`
	OK      bool            `json:"ok"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code      protocol.Code `json:"code"`
		Message   string        `json:"message"`
		Retryable bool          `json:"retryable"`
	} `json:"error"`
}

// cliCtx runs the CLI in process and returns stdout, stderr and the exit
// code.
func cliCtx(ctx context.Context, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := run(ctx, args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// cliJSON runs a command with --format json, checks that stdout is exactly
// one envelope (and the exit code), and returns it.
func cliJSON(t *testing.T, wantExit int, args ...string) envelope {
	t.Helper()
	out, stderr, code := cliCtx(context.Background(), args...)
	if code != wantExit {
		t.Fatalf("%v: exit %d, want %d\nstdout %s\nstderr %s", args, code, wantExit, out, stderr)
	}
	return parseEnvelope(t, args[0], out, code)
}

func parseEnvelope(t testing.TB, cmd, out string, code int) envelope {
	t.Helper()
	if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("stdout is not one line: %q", out)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var env envelope
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
	if dec.More() {
		t.Fatalf("more than one object: %q", out)
	}
	if env.Schema != protocol.EnvelopeSchema || env.Command != cmd {
		t.Fatalf("envelope %+v", env)
	}
	switch {
	case env.OK && (env.Error != nil || string(env.Result) == "null" || code != exitOK):
		t.Fatalf("ok envelope %s with exit %d", out, code)
	case !env.OK && (env.Error == nil || string(env.Result) != "null" || code != protocol.ExitCode(env.Error.Code)):
		t.Fatalf("failed envelope %s with exit %d", out, code)
	case !env.OK && (env.Error.Retryable != env.Error.Code.Retryable() || env.Error.Message == ""):
		t.Fatalf("error %+v", env.Error)
	}
	return env
}
