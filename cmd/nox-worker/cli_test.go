package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

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

func TestRunCommand(t *testing.T) {
	add := examplePath("add.nox")
	out, stderr, code := cliCtx(context.Background(), "run", add, "--input-values", "3,5")
	if code != exitOK || out != "8\n" || stderr != "Executed in 3 reductions\n" {
		t.Fatalf("human run: %d %q %q", code, out, stderr)
	}
	// Flags before the positional argument work too, and the bundle gives
	// the same program.
	out, _, code = cliCtx(context.Background(), "run", "--input-values=3,5", examplePath("add.bundle.json"))
	if code != exitOK || out != "8\n" {
		t.Fatalf("bundle run: %d %q", code, out)
	}
	out, _, _ = cliCtx(context.Background(), "run", examplePath("hashchain.nox"), "--input-values", "3,7")
	if out != "16026441910461879358\n4127042615640775805\n17216592300335164425\n3749972291555656512\n" {
		t.Fatalf("hash chain: %q", out)
	}

	env := cliJSON(t, exitOK, "run", add, "--input-values", "3,5", "--format", "json")
	var r map[string]any
	unmarshal(t, env.Result, &r)
	if r["kind"] != "execution" || r["reductions"] != "3" || r["budget"] != "1000000" ||
		r["profile"] != protocol.ProfilePublicTrace || len(r["output"].([]any)) != 1 || r["output"].([]any)[0] != "8" {
		t.Fatalf("result %s", env.Result)
	}
	id := r["program"].(map[string]any)
	if len(id["particle"].(string)) != 64 || len(id["tokens_sha256"].(string)) != 64 {
		t.Fatalf("identity %v", id)
	}

	// An input file (schema v1) gives the same run.
	dir := t.TempDir()
	in := writeFile(t, dir, "in.json", `{"schema_version":1,"public":[3,"5"],"secret":[]}`)
	out, _, code = cliCtx(context.Background(), "run", add, "--input-file", in)
	if code != exitOK || out != "8\n" {
		t.Fatalf("input file: %d %q", code, out)
	}
}

func TestProveAndVerifyCommands(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "add.nox", "[5 [[0 2] [0 6]]]\n")
	out, stderr, code := cliCtx(context.Background(), "prove", src, "--input-values", "3,5")
	certPath := filepath.Join(dir, "add.cnxt.zst")
	if code != exitOK || out != certPath+"\n" || !strings.Contains(stderr, "3 reductions") || !strings.Contains(stderr, "Output: [8]") {
		t.Fatalf("prove: %d %q %q", code, out, stderr)
	}
	if st, err := os.Stat(certPath); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("certificate file: %v %v", st, err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"add.cnxt.zst", "add.nox"}) {
		t.Fatalf("prove left %v", names)
	}
	before, _ := os.ReadFile(certPath)

	// No overwrite without --force; with it, the same bytes again.
	env := cliJSON(t, exitUsage, "prove", src, "--input-values", "3,5", "--format", "json")
	if env.Error.Code != protocol.CodeInvalidJob || !strings.Contains(env.Error.Message, "--force") {
		t.Fatalf("overwrite: %+v", env.Error)
	}
	env = cliJSON(t, exitOK, "prove", src, "--input-values", "3,5", "--force", "--format", "json")
	var p map[string]any
	unmarshal(t, env.Result, &p)
	after, _ := os.ReadFile(certPath)
	art := p["artifact"].(map[string]any)
	if !bytes.Equal(before, after) || p["kind"] != "execution_certificate" || art["path"] != certPath ||
		art["size"] != decimalString(uint64(len(after))) || p["disclosure"] != "complete_witness" ||
		p["zero_knowledge"] != false || p["succinct"] != false || p["reductions"] != "3" {
		t.Fatalf("prove result %s", env.Result)
	}
	if names := dirNames(t, dir); len(names) != 2 {
		t.Fatalf("prove --force left %v", names)
	}

	// verify: alone, with every expectation, and the human summary.
	env = cliJSON(t, exitOK, "verify", certPath, "--format", "json")
	var v map[string]any
	unmarshal(t, env.Result, &v)
	if v["kind"] != "verification" || v["mode"] != "execution_certificate" || v["claim_checked"] != false ||
		v["budget"] != "1000000" || v["budget_bound"] != "1000000" {
		t.Fatalf("verify result %s", env.Result)
	}
	if c := v["checked"].(map[string]any); c["program"] != false || c["inputs"] != false || c["claim"] != false || c["budget"] != true {
		t.Fatalf("checked %v", c)
	}
	env = cliJSON(t, exitOK, "verify", certPath, "--program", examplePath("add.bundle.json"),
		"--input-values", "3,5", "--claim", "8", "--format", "json")
	unmarshal(t, env.Result, &v)
	if c := v["checked"].(map[string]any); c["program"] != true || c["inputs"] != true || c["claim"] != true || v["claim_checked"] != true {
		t.Fatalf("checked %s", env.Result)
	}
	out, _, code = cliCtx(context.Background(), "verify", certPath, "--claim", "8")
	if code != exitOK || !strings.HasPrefix(out, "Verification: PASS") || !strings.Contains(out, "--format json") {
		t.Fatalf("human verify: %d %q", code, out)
	}

	// Rejections, exit 5.
	for _, c := range []struct {
		name string
		args []string
		code protocol.Code
	}{
		{"claim", []string{"--claim", "9"}, protocol.CodeClaimMismatch},
		{"longer claim", []string{"--claim", "8,0"}, protocol.CodeClaimMismatch},
		{"program", []string{"--program", examplePath("inverse.nox")}, protocol.CodeClaimMismatch},
		{"inputs", []string{"--input-values", "5,3"}, protocol.CodeClaimMismatch},
		{"budget bound", []string{"--budget", "999999"}, protocol.CodeClaimMismatch},
	} {
		env := cliJSON(t, exitRejected, append([]string{"verify", certPath, "--format", "json"}, c.args...)...)
		if env.Error.Code != c.code {
			t.Errorf("%s: %+v", c.name, env.Error)
		}
	}
	tampered := append([]byte(nil), after...)
	tampered[len(tampered)/2] ^= 1
	bad := writeFile(t, dir, "bad.cnxt.zst", string(tampered))
	env = cliJSON(t, exitRejected, "verify", bad, "--format", "json")
	if env.Error.Code != protocol.CodeProofRejected {
		t.Fatalf("tampered: %+v", env.Error)
	}
	_, stderr, code = cliCtx(context.Background(), "verify", bad)
	if code != exitRejected || !strings.HasPrefix(stderr, "Verification: FAIL (proof_rejected") {
		t.Fatalf("human fail: %d %q", code, stderr)
	}
}

func TestCommandErrors(t *testing.T) {
	dir := t.TempDir()
	add := examplePath("add.nox")
	countdown := examplePath("countdown.nox")
	secret := writeFile(t, dir, "secret.json", `{"schema_version":1,"public":[1],"secret":["35"]}`)
	state := writeFile(t, dir, "state.json", `{"target_vm":"nox","assembly":"[1 0]","reads_state":true}`)
	triton := writeFile(t, dir, "triton.json", `{"target_vm":"triton","assembly":"[1 0]"}`)
	call := writeFile(t, dir, "call.nox", "[16 [[1 7] [1 0]]]")
	look := writeFile(t, dir, "look.nox", "[17 [[1 0] [1 0]]]")
	syntax := writeFile(t, dir, "syntax.nox", "[1 x]")
	other := writeFile(t, dir, "prog.txt", "[1 0]")
	os.Symlink(add, filepath.Join(dir, "link.nox"))
	dirNox := filepath.Join(dir, "d.nox")
	os.Mkdir(dirNox, 0o700)
	fifo := filepath.Join(dir, "fifo.nox")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	notZstd := writeFile(t, dir, "plain.cnxt.zst", "CYNXTRC1 not compressed")
	huge := filepath.Join(dir, "huge.cnxt.zst")
	f, _ := os.Create(huge)
	f.Truncate(protocol.DefaultArtifactBytes + 1)
	f.Close()

	for _, c := range []struct {
		name string
		args []string
		code protocol.Code
	}{
		{"no input", []string{"run"}, protocol.CodeInvalidJob},
		{"two inputs", []string{"run", add, add}, protocol.CodeInvalidJob},
		{"unknown flag", []string{"run", add, "--frobnicate"}, protocol.CodeInvalidJob},
		{"bad format", []string{"describe", "--format", "xml"}, protocol.CodeInvalidJob},
		{"input conflict", []string{"run", add, "--input-values", "1", "--input-file", secret}, protocol.CodeInvalidJob},
		{"value not canonical", []string{"run", add, "--input-values", "3,18446744069414584321"}, protocol.CodeInvalidJob},
		{"value with spaces", []string{"run", add, "--input-values", "3, 5"}, protocol.CodeInvalidJob},
		{"budget zero", []string{"run", add, "--budget", "0"}, protocol.CodeInvalidJob},
		{"budget hex", []string{"run", add, "--budget", "0x10"}, protocol.CodeInvalidJob},
		{"too many inputs", []string{"run", add, "--input-values", strings.Repeat("1,", 64) + "1"}, protocol.CodeInvalidJob},
		{"missing file", []string{"run", filepath.Join(dir, "nope.nox")}, protocol.CodeInvalidJob},
		{"symlink", []string{"run", filepath.Join(dir, "link.nox")}, protocol.CodeInvalidJob},
		{"directory", []string{"run", dirNox}, protocol.CodeInvalidJob},
		{"fifo", []string{"run", fifo}, protocol.CodeInvalidJob},
		{"other extension", []string{"run", other}, protocol.CodeInvalidJob},
		{"syntax", []string{"run", syntax}, protocol.CodeInvalidJob},
		{"secret in input file", []string{"run", add, "--input-file", secret}, protocol.CodeUnsupportedSecret},
		{"reads state", []string{"run", state}, protocol.CodeUnsupportedState},
		{"other vm", []string{"prove", triton}, protocol.CodeUnsupportedProfile},
		{"call reached", []string{"run", call}, protocol.CodeUnsupportedSecret},
		{"look reached", []string{"prove", look, "--output", filepath.Join(dir, "look.cnxt.zst")}, protocol.CodeUnsupportedState},
		{"halt", []string{"run", countdown, "--input-values", "100", "--budget", "50"}, protocol.CodeBudgetExhausted},
		{"inv zero", []string{"prove", examplePath("inverse.nox"), "--input-values", "0", "--output", filepath.Join(dir, "inv.cnxt.zst")}, protocol.CodeExecutionFailed},
		{"depth", []string{"run", countdown, "--input-values", "600"}, protocol.CodeExecutionFailed},
		{"verify missing", []string{"verify", filepath.Join(dir, "nope.cnxt.zst")}, protocol.CodeInvalidJob},
		{"verify not zstd", []string{"verify", notZstd}, protocol.CodeProofRejected},
		{"verify huge", []string{"verify", huge}, protocol.CodeArtifactTooLarge},
		{"verify empty claim", []string{"verify", notZstd, "--claim", ""}, protocol.CodeInvalidJob},
		{"prove into missing dir", []string{"prove", add, "--output", filepath.Join(dir, "no", "x.cnxt.zst")}, protocol.CodeIOError},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := cliJSON(t, protocol.ExitCode(c.code), append(c.args, "--format", "json")...)
			if env.Error.Code != c.code {
				t.Fatalf("%+v", env.Error)
			}
			if strings.Contains(env.Error.Message, "35") && c.name == "secret in input file" {
				t.Fatalf("secret echoed: %q", env.Error.Message)
			}
			// Human mode: the same exit code, nothing on stdout, the code
			// on stderr.
			out, stderr, code := cliCtx(context.Background(), c.args...)
			if code != protocol.ExitCode(c.code) || out != "" || !strings.Contains(stderr, string(c.code)) {
				t.Fatalf("human: %d %q %q", code, out, stderr)
			}
		})
	}
	// Nothing was written besides the test's own files.
	for _, n := range dirNames(t, dir) {
		if strings.HasPrefix(n, ".") || n == "look.cnxt.zst" || n == "inv.cnxt.zst" {
			t.Fatalf("left %s", n)
		}
	}
}

// A Malformed that is the depth limit says so, for run and prove; a
// malformed formula's does not.
func TestDepthLimitIsSaid(t *testing.T) {
	dir := t.TempDir()
	countdown := examplePath("countdown.nox")
	malformed := writeFile(t, dir, "pairhead.nox", "[[1 0] 0]")
	for _, c := range []struct {
		args []string
		deep bool
	}{
		{[]string{"run", countdown, "--input-values", "600"}, true},
		{[]string{"prove", countdown, "--input-values", "600", "--output", filepath.Join(dir, "c.cnxt.zst")}, true},
		{[]string{"run", malformed}, false},
	} {
		env := cliJSON(t, protocol.ExitCode(protocol.CodeExecutionFailed), append(c.args, "--format", "json")...)
		said := strings.Contains(env.Error.Message, "deeper than the depth limit of 1000")
		if env.Error.Code != protocol.CodeExecutionFailed || !strings.Contains(env.Error.Message, "Malformed") || said != c.deep {
			t.Errorf("%v: %+v", c.args, env.Error)
		}
	}
}

func TestCommandCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	dir := t.TempDir()
	out, _, code := cliCtx(ctx, "prove", examplePath("doubling.nox"), "--input-values", "200",
		"--budget", "18446744069414584320", "--output", filepath.Join(dir, "d.cnxt.zst"), "--format", "json")
	env := parseEnvelope(t, "prove", out, code)
	if code != exitCancelled || env.Error.Code != protocol.CodeCancelled {
		t.Fatalf("%d %s", code, out)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("left %v", names)
	}
}

func TestDescribeAndHelp(t *testing.T) {
	env := cliJSON(t, exitOK, "describe", "--format", "json")
	var d struct {
		Capabilities json.RawMessage `json:"capabilities"`
		Descriptor   json.RawMessage `json:"descriptor"`
	}
	unmarshal(t, env.Result, &d)
	caps, err := protocol.ParseCapabilities(d.Capabilities)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := protocol.ParseDescriptor(d.Descriptor)
	if err != nil {
		t.Fatal(err)
	}
	if caps.Backend != "nox-worker" || desc.Executor.Backend != protocol.BackendIsolatedProcess {
		t.Fatalf("%+v %+v", caps, desc)
	}
	out, _, code := cliCtx(context.Background(), "describe")
	if code != exitOK || !strings.Contains(out, "cyber-nox-public-trace-v1") || !strings.Contains(out, "state_reads=false") {
		t.Fatalf("human describe: %d %q", code, out)
	}
	for _, cmd := range []string{"run", "prove", "verify", "describe"} {
		stdout, _, code := cliCtx(context.Background(), cmd, "--help")
		if code != exitOK || !strings.HasPrefix(stdout, "usage: nox-worker "+cmd) {
			t.Fatalf("%s --help: %d %q", cmd, code, stdout)
		}
	}
	if _, stderr, code := cliCtx(context.Background()); code != exitUsage || !strings.HasPrefix(stderr, "usage:") {
		t.Fatalf("no arguments: %d", code)
	}
	if _, _, code := cliCtx(context.Background(), "frobnicate"); code != exitUsage {
		t.Fatalf("unknown command: %d", code)
	}
	// Without the cookie, no arguments is a person: usage, exit 2.
	var errb bytes.Buffer
	if code := realMain(nil, func(string) string { return "" }, nil, &bytes.Buffer{}, &errb); code != exitUsage {
		t.Fatalf("realMain without cookie: %d", code)
	}
}

func TestWantsJSON(t *testing.T) {
	for args, want := range map[string]bool{
		"--format json":                true,
		"--format=json":                true,
		"-format json":                 true,
		"--format json --format human": false,
		"--format human --format=json": true,
		"-- --format json":             false,
		"--format":                     false,
		"x json":                       false,
	} {
		if got := wantsJSON(strings.Fields(args)); got != want {
			t.Errorf("%q: %v", args, got)
		}
	}
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

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
