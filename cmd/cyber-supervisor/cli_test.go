package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// The CLI's tests run the built binaries: cyber-supervisor, with
// nox-worker and sandbox-gate beside it (where the supervisor finds them).
var (
	binDir   string
	cliBin   string
	repoRoot string
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Dir(filepath.Dir(filepath.Dir(file)))
	dir, err := os.MkdirTemp("", "cli-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir, cliBin = dir, filepath.Join(dir, "cyber-supervisor")
	for bin, pkg := range map[string]string{cliBin: "./cmd/cyber-supervisor", filepath.Join(dir, "nox-worker"): "./cmd/nox-worker", filepath.Join(dir, "sandbox-gate"): "./cmd/sandbox-gate"} {
		if err := testbin.Build(repoRoot, pkg, bin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs the binary with args and an empty environment but PATH.
func cli(t testing.TB, args ...string) result {
	t.Helper()
	return cliEnv(t, nil, args...)
}

func cliEnv(t testing.TB, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliBin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	out, errb, code, err := testbin.Capture(cmd)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return result{out, errb, code}
}

// envelope checks that stdout is exactly one cyber/cli/v1 envelope and
// returns it.
func envelope(t testing.TB, out string) protocol.Envelope {
	t.Helper()
	var env protocol.Envelope
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("not one JSON envelope: %q: %v", out, err)
	}
	if env.Schema != protocol.EnvelopeSchema || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("envelope %q", out)
	}
	return env
}

// jsonRun runs args with --format json and returns the envelope.
func jsonRun(t testing.TB, wantExit int, args ...string) protocol.Envelope {
	t.Helper()
	r := cli(t, append(args, "--format", "json")...)
	if r.code != wantExit {
		t.Fatalf("%v: exit %d, want %d\nstdout %s\nstderr %s", args, r.code, wantExit, r.stdout, r.stderr)
	}
	return envelope(t, r.stdout)
}

func writeFile(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const add = "[5 [[0 2] [0 6]]]"

// Every command prints its help on stdout with exit 0, with -h, --help
// and help CMD; run's says what INPUT may be.
func TestHelpOnEveryCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the binary four times for every command")
	}
	cmds := []string{"serve", "run", "submit", "status", "list", "events", "result", "cancel", "resolve", "gc", "drain", "hosts", "dashboard", "help", "capabilities", "store", "store check", "store backup", "version", "completion",
		"neuron", "neuron init", "neuron show", "neuron policy", "grant", "grant show", "grant set", "placement", "placement show", "placement bind",
		"placement release", "prog", "prog install", "prog upgrade", "prog list", "prog show", "prog pause", "prog resume", "prog retire", "invoke",
		"invocation", "invocation list", "invocation show", "invocation cancel", "invocation archive", "invocation rebind",
		"operation", "operation list", "operation take", "operation reconcile"}
	// The list is every command the binary has (its completion says).
	listed := map[string]bool{}
	for _, c := range cmds {
		listed[c] = true
	}
	for _, line := range strings.Split(cli(t, "__complete", "").stdout, "\n") {
		if name, _, _ := strings.Cut(line, "\t"); name != "" && !strings.HasPrefix(name, ":") && !listed[name] {
			t.Errorf("command %q is not in the help test's list", name)
		}
	}
	for _, c := range cmds {
		w := strings.Fields(c)
		for _, args := range [][]string{append(w, "-h"), append(w, "--help"), append([]string{"help"}, w...)} {
			r := cli(t, args...)
			if r.code != 0 || !strings.Contains(r.stdout, "Usage:") || r.stderr != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
			}
		}
	}
	r := cli(t, "run", "--help")
	if !strings.Contains(r.stdout, "INPUT is a nox program") || !strings.Contains(r.stdout, ".json") {
		t.Errorf("run --help does not say what INPUT may be:\n%s", r.stdout)
	}
	// No doubled defaults ("(default: the slots; 0: none) (default -1)").
	for _, c := range cmds {
		out := cli(t, append(strings.Fields(c), "--help")...).stdout
		for _, line := range strings.Split(out, "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("%s --help: doubled default: %q", c, line)
			}
			// Nor a Go slice's formatting ("state: [queued running ...]").
			if regexp.MustCompile(`\[[a-z_]+ [a-z_]+`).MatchString(line) {
				t.Errorf("%s --help: a list printed as Go prints it: %q", c, line)
			}
		}
	}
	if r := cli(t, "--help"); r.code != 0 || !strings.Contains(r.stdout, "serve") {
		t.Errorf("--help: %+v", r)
	}
	// The help flag before the command is that command's help, as after it.
	for _, args := range [][]string{{"-h", "run"}, {"--help", "run"}, {"--help", "store", "check"}} {
		want := cli(t, append(args[1:], "--help")...).stdout
		if r := cli(t, args...); r.code != 0 || r.stdout != want {
			t.Errorf("%v: exit %d, stdout %q, want %s --help's", args, r.code, r.stdout, args[1:])
		}
	}
}

// help of a topic that is no command is a usage error, like the command
// itself would be, not the root's help with exit 0.
func TestHelpOfAnUnknownTopic(t *testing.T) {
	for _, args := range [][]string{{"help", "frobnicate"}, {"help", "store", "frobnicate"}, {"help", "run", "extra"}} {
		r := cli(t, args...)
		if r.code != protocol.ExitUsage || r.stdout != "" || !strings.Contains(r.stderr, "unknown help topic") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
		env := jsonRun(t, protocol.ExitUsage, args...)
		if env.Command != "help" || env.Error == nil || env.Error.Code != protocol.CodeUsage {
			t.Errorf("%v --format json: %+v", args, env)
		}
	}
}

// Global flags stand before or after the command.
func TestFlagsAnywhere(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{
		{"--home", home, "list", "--format", "json"},
		{"list", "--home", home, "--format", "json"},
		{"--format", "json", "--log-level", "debug", "list", "--home", home},
		{"list", "--log-level=debug", "--home=" + home, "--format=json"},
	} {
		r := cli(t, args...)
		env := envelope(t, r.stdout)
		if r.code != protocol.ExitUnavailable || env.Error == nil || env.Error.Code != protocol.CodeUnavailable || !strings.Contains(env.Error.Message, home) {
			t.Errorf("%v: exit %d %+v", args, r.code, env.Error)
		}
	}
}

func TestVersion(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", cliBin).Output()
	if err != nil {
		t.Fatal(err)
	}
	revision := ""
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision=") {
			revision = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := cli(t, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "cyber-supervisor ") || !strings.Contains(r.stdout, runtime.Version()) {
			t.Errorf("%v: %+v", args, r)
		}
		if revision != "" && !strings.Contains(r.stdout, revision) {
			t.Errorf("%v: %q lacks the build's revision %s", args, r.stdout, revision)
		}
	}
	// --version is the version command, its envelope too.
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		env := jsonRun(t, 0, args...)
		var v buildVersion
		if err := json.Unmarshal(env.Result, &v); err != nil || env.Command != "version" || v.Module != "github.com/cyberia-to/cyber-supervisor" || v.Revision != revision {
			t.Errorf("%v: version result %s: %v", args, env.Result, err)
		}
		// vcs_modified comes with a revision, or not at all.
		if (revision != "") != strings.Contains(string(env.Result), `"vcs_modified"`) {
			t.Errorf("%v: revision %q, result %s", args, revision, env.Result)
		}
	}
}

// With --format json, help and completion are envelopes too: the text a
// human gets is the result, the status is the same.
func TestHelpAndCompletionInJSON(t *testing.T) {
	for _, args := range [][]string{{"run", "--help"}, {"-h", "run"}, {"help", "run"}, {"store", "check", "-h"}, {"--help"}} {
		env := jsonRun(t, protocol.ExitOK, args...)
		var res struct{ Help string }
		if err := json.Unmarshal(env.Result, &res); err != nil || !env.OK || env.Error != nil {
			t.Fatalf("%v: envelope %+v (%v)", args, env, err)
		}
		// The same text as --format human prints.
		if want := cli(t, args...).stdout; res.Help != want {
			t.Errorf("%v: help in the envelope %q, want %q", args, res.Help, want)
		}
		if want := commandOf(args); env.Command != want {
			t.Errorf("%v: envelope of command %q, want %q", args, env.Command, want)
		}
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		env := jsonRun(t, protocol.ExitOK, "completion", sh)
		var res struct{ Shell, Script string }
		if err := json.Unmarshal(env.Result, &res); err != nil || res.Shell != sh || res.Script != cli(t, "completion", sh).stdout {
			t.Errorf("completion %s: envelope %.200s (%v)", sh, env.Result, err)
		}
	}
}

// commandOf is the envelope's command of a help command line.
func commandOf(args []string) string {
	var words []string
	for _, a := range args {
		if a != "help" && !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	if len(words) == 0 {
		return "cyber-supervisor"
	}
	return strings.Join(words, " ")
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := cli(t, "completion", sh)
		if r.code != 0 || !strings.Contains(r.stdout, "cyber-supervisor") || len(r.stdout) < 500 {
			t.Errorf("completion %s: exit %d, %d bytes", sh, r.code, len(r.stdout))
		}
	}
	// The refusal says the command once: "completion: completion: ..."
	// was a doubled word.
	if r := cli(t, "completion", "tcsh"); r.code != protocol.ExitUsage || strings.Count(r.stderr, "completion:") != 1 || !strings.Contains(r.stderr, `"tcsh" is not bash, zsh or fish`) {
		t.Errorf("completion tcsh: exit %d, stderr %q", r.code, r.stderr)
	}
	// What the scripts ask the binary: a closed set of words completes to
	// its words, a global flag's on a subcommand too.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "x.nox", "--op", ""}, "execute\nprove\nverify\n"},
		{[]string{"list", "--format", ""}, "human\njson\n"},
		{[]string{"gc", "--state", ""}, "accepted\nrejected\nfailed\ncancelled\n"},
		{[]string{"help", "sto"}, "store\tCheck, back up or restore the home's store\n"},
	} {
		r := cli(t, append([]string{"__complete"}, c.args...)...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, c.want) {
			t.Errorf("completion of %q: exit %d, %q", c.args, r.code, r.stdout)
		}
	}
}

// A word after a command of subcommands that is none of them is named as
// an unknown command, with the subcommands there are, not as an argument
// the command does not take.
func TestUnknownSubcommand(t *testing.T) {
	for _, args := range [][]string{{"store", "chek"}, {"prog", "instal", "x.nox"}, {"neuron", "shw"}, {"operation", "lst"}} {
		env := jsonRun(t, protocol.ExitUsage, args...)
		want := fmt.Sprintf("unknown command %q for \"cyber-supervisor %s\"", args[1], args[0])
		if env.Error == nil || env.Error.Code != protocol.CodeUsage || !strings.Contains(env.Error.Message, want) || !strings.Contains(env.Error.Message, "subcommands: ") {
			t.Errorf("%v: %+v, want %s", args, env.Error, want)
		}
		if r := cli(t, args...); r.code != protocol.ExitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("%v: exit %d, %q", args, r.code, r.stderr)
		}
	}
	// A command without subcommands still says it takes no arguments.
	if env := jsonRun(t, protocol.ExitUsage, "list", "extra"); env.Error == nil || env.Error.Message != "list takes no arguments" {
		t.Errorf("list extra: %+v", env.Error)
	}
}

// Usage errors exit 2, with the envelope (code usage) in json format,
// and happen before anything else: no home is created.
func TestUsageErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the binary for every usage error")
	}
	dir := t.TempDir()
	prog := writeFile(t, dir, "add.nox", add)
	home := filepath.Join(dir, "home")
	cases := [][]string{
		{},
		{"frobnicate"},
		{"run"},
		{"run", prog, prog},
		{"status"},
		{"list", "extra"},
		{"run", prog, "--bogus"},
		{"run", prog, "--format", "yaml"},
		{"list", "--format", "yaml"},
		{"run", prog, "--time", "-5s"},
		{"run", prog, "--time", "500us"},
		{"run", prog, "--time", "0s"},
		{"run", prog, "--time", "1.5ms"},
		{"run", prog, "--time", "soon"},
		{"run", prog, "--isolation", "maybe"},
		{"run", prog, "--op", "frobnicate"},
		{"run", prog, "--budget", "-1"},
		{"run", prog, "--budget", "0"},
		{"run", prog, "--memory", "lots"},
		{"run", prog, "--memory", "0"},
		{"run", prog, "--retries", "-1"},
		{"run", prog, "--retries", "100"},
		{"run", prog, "--priority", "99999999999"},
		{"run", prog, "--input-values", "1", "--input-file", prog},
		{"run", prog, "--op", "verify"},
		{"run", prog, "--artifact", prog},
		{"run", prog, "--log-level", "loud"},
		{"run", prog, "--log-format", "xml"},
		{"serve", "--slots", "0"},
		{"serve", "--slots", "-3"},
		{"serve", "--queue", "0"},
		{"serve", "--queue", "-1"},
		{"serve", "--pool", "500"},
		// 0 is no bound the daemon could serve, not "the default".
		{"serve", "--api-max-conns", "0"},
		{"serve", "--api-header-timeout", "0s"},
		{"serve", "--api-body-timeout", "0s"},
		{"serve", "--api-idle-timeout", "0s"},
		{"serve", "--api-write-timeout", "0s"},
		{"serve", "--slots", "2", "--pool", "3"},
		{"serve", "--store", "zk://10.0.0.1:2181"},
		{"serve", "--store", "etcd://"},
		{"serve", "--store", "etcd://10.0.0.1"},
		{"serve", "--store", "etcd://10.0.0.1:2379,:2379"},
		{"serve", "--store", "etcd://10.0.0.1:2379/a//b"},
		{"serve", "--lease-ttl", "5s"},
		// A host id the supervisor would refuse is the flag's error, not
		// an internal_error after the home is made (exit 1 restarts a unit).
		{"serve", "--host-id", "bad id"},
		{"serve", "--host-id", ".hidden"},
		{"serve", "--host-id", strings.Repeat("h", 65)},
		// So is every other value the supervisor or its launcher would
		// refuse once started.
		{"serve", "--cgroup-name", "../x"},
		{"serve", "--cgroup-name", "a/b"},
		{"serve", "--worker", filepath.Join(dir, "absent")},
		{"serve", "--worker", dir},
		{"run", prog, "--worker", filepath.Join(dir, "absent")},
		{"serve", "--default-memory", "100TiB"},
		{"run", prog, "--default-memory", "100TiB"},
		{"serve", "--default-time", "200h"},
		{"serve", "--etcd-ca", prog},
		{"serve", "--store", "etcd://10.0.0.1:2379", "--lease-ttl", "500ms"},
		{"serve", "--store", "etcd://10.0.0.1:2379", "--lease-ttl", "1500ms"},
		{"serve", "--store", "etcd://10.0.0.1:2379", "--lease-ttl", "0s"},
		{"serve", "--store", "etcd://10.0.0.1:2379", "--etcd-ca", prog},
		{"serve", "--store", "etcd://10.0.0.1:2379", "--etcd-ca", filepath.Join(dir, "absent.pem")},
		{"serve", "--store", "etcd://10.0.0.1:2379", "--etcd-cert", prog},
		{"list", "--state", "sleeping"},
		{"list", "--limit", "0"},
	}
	for _, args := range cases {
		args = append([]string{"--home", home}, args...)
		if r := cli(t, args...); r.code != protocol.ExitUsage || r.stdout != "" || !strings.Contains(r.stderr, "--help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
		r := cli(t, append(args, "--format", "json")...)
		env := envelope(t, r.stdout)
		if r.code != protocol.ExitUsage || env.OK || env.Error == nil || env.Error.Code != protocol.CodeUsage || env.Error.Retryable {
			t.Errorf("%v --format json: exit %d %+v", args, r.code, env.Error)
		}
	}
	if _, err := os.Stat(home); err == nil {
		t.Error("a usage error created the home")
	}
}

// A bad --budget is said in words, with the range (p-1 is the largest
// budget the contract allows), not as strconv's error.
func TestBudgetValues(t *testing.T) {
	dir := t.TempDir()
	prog := writeFile(t, dir, "add.nox", add)
	home := filepath.Join(dir, "home")
	for _, v := range []string{"-1", "0", "x", "1e6", "18446744069414584321", "18446744073709551616"} {
		r := cli(t, "--home", home, "run", prog, "--budget", v)
		if r.code != protocol.ExitUsage || !strings.Contains(r.stderr, fmt.Sprintf("%q is not a budget: a whole number of reductions from 1 to 18446744069414584320", v)) || strings.Contains(r.stderr, "strconv") {
			t.Errorf("--budget %s: exit %d, stderr %q", v, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(home); err == nil {
		t.Error("a usage error created the home")
	}
	env := jsonRun(t, protocol.ExitOK, "--home", home, "run", prog, "--input-values", "3,5", "--budget", "18446744069414584320", "--isolation", "off")
	var res struct {
		Budget string `json:"budget"`
	}
	if err := json.Unmarshal(env.Result, &res); err != nil || res.Budget != "18446744069414584320" {
		t.Errorf("the largest budget: %s %v", env.Result, err)
	}
}

// Bad input is refused before anything starts, with its contract code:
// no worker, no store, no home.
func TestBadInputGetsItsCode(t *testing.T) {
	dir := t.TempDir()
	prog := writeFile(t, dir, "add.nox", add)
	home := filepath.Join(dir, "home")
	cases := []struct {
		args []string
		code protocol.Code
	}{
		{[]string{"run", prog, "--input-values", "18446744069414584321"}, protocol.CodeInvalidJob},
		{[]string{"run", prog, "--input-values", "01"}, protocol.CodeInvalidJob},
		{[]string{"run", filepath.Join(dir, "missing.nox")}, protocol.CodeInvalidJob},
		{[]string{"run", dir}, protocol.CodeInvalidJob},
		// INPUT's kind is its extension, by the rule nox-worker shares
		// (protocol.ReadProgram): a formula in a .txt file is refused.
		{[]string{"run", writeFile(t, dir, "add.txt", add), "--input-values", "3,5"}, protocol.CodeInvalidJob},
		{[]string{"run", prog, "--expect", "x"}, protocol.CodeInvalidJob},
		{[]string{"run", prog, "--input-values", "3,5", "--expect", ""}, protocol.CodeInvalidJob},
		{[]string{"run", prog, "--input-file", filepath.Join(dir, "missing.json")}, protocol.CodeInvalidJob},
	}
	for _, c := range cases {
		env := jsonRun(t, protocol.ExitCode(c.code), append([]string{"--home", home}, c.args...)...)
		if env.OK || env.Error == nil || env.Error.Code != c.code {
			t.Errorf("%v: %+v, want %s", c.args, env.Error, c.code)
		}
	}
	if _, err := os.Stat(home); err == nil {
		t.Error("refused input created the home")
	}
}

// A FIFO given as INPUT, --input-file or --artifact is refused at once
// (it never blocks the open), and so is a symlink: the one rule of
// protocol.ReadLocalFile, shared with nox-worker.
func TestInputsMustBeRegularFiles(t *testing.T) {
	dir := t.TempDir()
	prog := writeFile(t, dir, "add.nox", add)
	fifo := filepath.Join(dir, "fifo.nox")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.nox")
	if err := os.Symlink(prog, link); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	for _, args := range [][]string{
		{"run", fifo},
		{"run", prog, "--input-file", fifo},
		{"run", prog, "--op", "verify", "--artifact", fifo},
		{"run", link},
		{"submit", fifo},
	} {
		start := time.Now()
		env := jsonRun(t, protocol.ExitUsage, append([]string{"--home", home}, args...)...)
		if env.Error == nil || env.Error.Code != protocol.CodeInvalidJob ||
			!(strings.Contains(env.Error.Message, "not a regular file") || strings.Contains(env.Error.Message, "symlink")) {
			t.Errorf("%v: %+v", args, env.Error)
		}
		if time.Since(start) > 30*time.Second {
			t.Errorf("%v took %s", args, time.Since(start))
		}
	}
}

// The command it suggests names the home when --home named it: a plain
// `cyber-supervisor serve` would start a daemon on another home.
func TestNoDaemonIsUnavailable(t *testing.T) {
	home := t.TempDir()
	for _, c := range []string{"list", "capabilities"} {
		env := jsonRun(t, protocol.ExitUnavailable, "--home", home, c)
		want := fmt.Sprintf("no daemon on %s; start `cyber-supervisor --home %s serve`", filepath.Join(home, "supervisor.sock"), home)
		if env.Error == nil || env.Error.Code != protocol.CodeUnavailable || env.Error.Message != want || !env.Error.Retryable {
			t.Fatalf("%s: %+v", c, env.Error)
		}
		r := cliEnv(t, []string{"CYBER_SUPERVISOR_HOME=" + home}, c, "--format", "json")
		want = fmt.Sprintf("no daemon on %s; start `cyber-supervisor serve`", filepath.Join(home, "supervisor.sock"))
		if env := envelope(t, r.stdout); r.code != protocol.ExitUnavailable || env.Error == nil || env.Error.Message != want {
			t.Fatalf("%s with $CYBER_SUPERVISOR_HOME: exit %d %+v", c, r.code, env.Error)
		}
	}
	for _, args := range [][]string{{"status", "j"}, {"events", "j"}, {"result", "j"}, {"cancel", "j"}} {
		r := cli(t, append([]string{"--home", home}, args...)...)
		if r.code != protocol.ExitUnavailable || !strings.Contains(r.stderr, "no daemon on") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	// A stale socket file (a daemon that died) is no daemon either.
	writeFile(t, home, "supervisor.sock", "")
	if env := jsonRun(t, protocol.ExitUnavailable, "--home", home, "list"); env.Error.Code != protocol.CodeUnavailable {
		t.Errorf("stale socket: %+v", env.Error)
	}
}

// The commands that maintain a home's store (gc, store check, store
// backup) make no home: a mistyped --home is no_store (exit 2), not an
// empty store created to find nothing in.
func TestMaintenanceMakesNoHome(t *testing.T) {
	home := filepath.Join(t.TempDir(), "typo")
	for _, args := range [][]string{{"gc"}, {"gc", "--state", "failed"}, {"store", "check"}, {"store", "backup", filepath.Join(t.TempDir(), "b.db")}} {
		env := jsonRun(t, protocol.ExitUsage, append([]string{"--home", home}, args...)...)
		want := "no store at " + filepath.Join(home, "store", "supervisor.db")
		if env.Error == nil || env.Error.Code != protocol.CodeNoStore || !strings.Contains(env.Error.Message, want) || env.Error.Retryable {
			t.Errorf("%v: %+v", args, env.Error)
		}
		if _, err := os.Stat(home); !os.IsNotExist(err) {
			t.Fatalf("%v made the home %s: %v", args, home, err)
		}
	}
}

func TestDecimalStrings(t *testing.T) {
	for in, want := range map[string]string{
		`{"n":1,"a":[1,2,{"b":3}],"s":"x","t":true,"z":null,"e":{}}`: `{"n":"1","a":["1","2",{"b":"3"}],"s":"x","t":true,"z":null,"e":{}}`,
		`[]`:                   `[]`,
		`[[1],[2,[]]]`:         `[["1"],["2",[]]]`,
		`18446744073709551615`: `"18446744073709551615"`,
		`{"b":1,"a":2}`:        `{"b":"1","a":"2"}`,
	} {
		got, err := decimalStrings([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("decimalStrings(%s) = %s, %v; want %s", in, got, err, want)
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
		r := cli(t, append([]string{"--home", home, "serve"}, args...)...)
		if r.code != protocol.ExitUsage || !strings.Contains(r.stderr, "invalid API configuration") {
			t.Errorf("%v: exit %d %q", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(home); err == nil {
		t.Error("a refused configuration created the home")
	}
}
