package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// serveBin starts `serve` on home (unisolated: the store is what is under
// test), with the flags extra beside, and returns once its socket
// answers; the cleanup stops it.
func serveBin(t *testing.T, home string, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(cliBin, append([]string{"--home", home, "serve", "--isolation", "off", "--slots", "1"}, extra...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	sock := filepath.Join(home, "supervisor.sock")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return cmd
		}
		select {
		case <-done:
			t.Fatalf("serve exited:\n%s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStoreCheckAndBackup(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long end-to-end run of the built binaries")
	}
	home := t.TempDir()
	prog := writeFile(t, t.TempDir(), "add.nox", add)
	if r := cli(t, "--home", home, "run", prog, "--op", "execute", "--input-values", "1,2", "--isolation", "off"); r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	// No daemon: on the file.
	if r := cli(t, "--home", home, "store", "check"); r.code != 0 || !strings.Contains(r.stdout, "1 jobs") || !strings.Contains(r.stdout, "no problems") {
		t.Fatalf("store check: %+v", r)
	}
	env := jsonRun(t, 0, "--home", home, "store", "check")
	if !env.OK || !strings.Contains(string(env.Result), `"jobs":"1"`) || !strings.Contains(string(env.Result), `"problems":[]`) {
		t.Fatalf("store check json: %s", env.Result)
	}
	offline := filepath.Join(t.TempDir(), "offline.db")
	if r := cli(t, "--home", home, "store", "backup", offline); r.code != 0 || !strings.Contains(r.stdout, "1 jobs") {
		t.Fatalf("store backup: %+v", r)
	}
	if r := cli(t, "store", "check", "--file", offline); r.code != 0 || !strings.Contains(r.stdout, "no problems") {
		t.Fatalf("store check of the backup: %+v", r)
	}
	// An existing FILE or a missing directory is the command line's to
	// correct: a usage error, exit 2, before anything is read.
	if r := cli(t, "--home", home, "store", "backup", offline); r.code != protocol.ExitUsage || !strings.Contains(r.stderr, "usage: ") || !strings.Contains(r.stderr, "the file exists") {
		t.Fatalf("a backup over an existing file: %+v", r)
	}
	if r := cli(t, "--home", home, "store", "backup", filepath.Join(offline+".d", "x")); r.code != protocol.ExitUsage || !strings.Contains(r.stderr, "does not exist") {
		t.Fatalf("a backup into a missing directory: %+v", r)
	}

	// With a daemon: through it (the file's lock is the daemon's, so the
	// direct path could not work).
	serveBin(t, home)
	if r := cli(t, "--home", home, "store", "check"); r.code != 0 || !strings.Contains(r.stdout, "no problems") {
		t.Fatalf("store check through the daemon: %+v", r)
	}
	live := filepath.Join(t.TempDir(), "live.db")
	if r := cli(t, "--home", home, "store", "backup", live); r.code != 0 {
		t.Fatalf("store backup through the daemon: %+v", r)
	}
	if r := cli(t, "store", "check", "--file", live); r.code != 0 || !strings.Contains(r.stdout, "1 jobs") {
		t.Fatalf("store check of the live backup: %+v", r)
	}
}

func TestDamagedStoreExits6(t *testing.T) {
	home := t.TempDir()
	prog := writeFile(t, t.TempDir(), "add.nox", add)
	if r := cli(t, "--home", home, "run", prog, "--op", "execute", "--input-values", "1,2", "--isolation", "off"); r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	db := filepath.Join(home, "store", "supervisor.db")
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	b[8] ^= 0xff // meta page 0's page type
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	want := "store " + db + " is damaged: page 0: meta page has flags"
	for _, args := range [][]string{
		{"store", "check"},
		{"serve", "--isolation", "off"},
		{"run", prog, "--op", "execute", "--input-values", "1,2", "--isolation", "off"},
	} {
		r := cli(t, append([]string{"--home", home}, args...)...)
		if r.code != protocol.ExitStoreDamaged || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "goroutine") {
			t.Errorf("%v on a damaged store: exit %d, stderr %q; want exit %d and %q", args, r.code, r.stderr, protocol.ExitStoreDamaged, want)
		}
		env := jsonRun(t, protocol.ExitStoreDamaged, append([]string{"--home", home}, args...)...)
		if env.OK || env.Error == nil || env.Error.Code != "store_damaged" || !strings.Contains(env.Error.Message, want) {
			t.Errorf("%v --format json: %+v", args, env.Error)
		}
	}
}

// Offline, the check of a home with a neuron verifies the signed records
// with the vault's key, as the daemon's check does; a vault it may not
// trust is named instead, and a --file is checked without the key.
func TestStoreCheckOfflineVerifiesSignatures(t *testing.T) {
	home := t.TempDir()
	jsonRun(t, 0, "--home", home, "neuron", "init", "--network", "testnet")
	if r := cli(t, "--home", home, "grant", "set", "--revision", "0", "--acts", "emit"); r.code != 0 {
		t.Fatalf("grant set: %+v", r)
	}
	signatures := func(args ...string) string {
		t.Helper()
		env := jsonRun(t, 0, args...)
		var rep struct {
			Signatures string `json:"signatures"`
			Fencing    string `json:"fencing_records"`
		}
		if err := json.Unmarshal(env.Result, &rep); err != nil || rep.Fencing == "0" {
			t.Fatalf("store check %v: %s (%v)", args, env.Result, err)
		}
		return rep.Signatures
	}
	if got := signatures("--home", home, "store", "check"); got != "verified" {
		t.Fatalf("offline check of a home with a neuron: signatures %q", got)
	}
	if r := cli(t, "--home", home, "store", "check"); r.code != 0 || !strings.Contains(r.stdout, "signatures verified") {
		t.Fatalf("store check: %+v", r)
	}
	if got := signatures("store", "check", "--file", filepath.Join(home, "store", "supervisor.db")); got != "not checked (no neuron key)" {
		t.Fatalf("check of a --file: signatures %q", got)
	}
	// A vault others can read is not trusted: the check says so and goes on.
	if err := os.Chmod(filepath.Join(home, "vault"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := signatures("--home", home, "store", "check"); !strings.HasPrefix(got, "not checked (") || !strings.Contains(got, "permissions") {
		t.Fatalf("offline check with an unsafe vault: signatures %q", got)
	}
}

// store check --file takes only a regular file: a FIFO (or a symlink to
// one) is refused at once instead of waiting for a writer (bbolt's open
// blocked there, past SIGTERM), and a directory is no store, not an
// internal error.
func TestStoreCheckFileMustBeRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.db")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{fifo, link, dir} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		cmd := exec.CommandContext(ctx, cliBin, "--home", filepath.Join(dir, "home"), "store", "check", "--file", file, "--format", "json")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.Output()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Fatalf("store check --file %s: still running after 15s", file)
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != protocol.ExitUsage {
			t.Errorf("store check --file %s: %v, want exit %d\n%s", file, err, protocol.ExitUsage, out)
			continue
		}
		env := envelope(t, string(out))
		if env.Error == nil || env.Error.Code != protocol.CodeNoStore || !strings.Contains(env.Error.Message, "not a regular file") {
			t.Errorf("store check --file %s: %+v", file, env.Error)
		}
	}
}

// A command the fencing engine suggests ("run `cyber-supervisor neuron
// init`") names the home when --home named it, on the home directly and
// through its daemon, as the CLI's own suggestions do; with the home from
// $CYBER_SUPERVISOR_HOME it stays as it is.
func TestFencingSuggestionsNameTheHome(t *testing.T) {
	home := filepath.Join(t.TempDir(), "a home")
	want := "(run `cyber-supervisor --home '" + home + "' neuron init`)"
	check := func(how string) {
		t.Helper()
		for _, c := range [][]string{{"neuron", "show"}, {"grant", "show"}} {
			env := jsonRun(t, protocol.ExitUsage, append([]string{"--home", home}, c...)...)
			if env.Error == nil || !strings.HasSuffix(env.Error.Message, want) {
				t.Errorf("%s, %v: %+v, want the message to end %s", how, c, env.Error, want)
			}
			r := cli(t, append([]string{"--home", home}, c...)...)
			if r.code != protocol.ExitUsage || !strings.HasSuffix(strings.TrimSpace(r.stderr), want) {
				t.Errorf("%s, %v: exit %d, %q", how, c, r.code, r.stderr)
			}
			r = cliEnv(t, []string{"CYBER_SUPERVISOR_HOME=" + home}, append(c, "--format", "json")...)
			if env := envelope(t, r.stdout); env.Error == nil || !strings.HasSuffix(env.Error.Message, "(run `cyber-supervisor neuron init`)") {
				t.Errorf("%s, %v from the environment: %+v", how, c, env.Error)
			}
		}
	}
	// A home with a store and no neuron (one with no store is no_store:
	// TestFencingCommandsMakeNoHome).
	st, err := bolt.Open(supervisor.StoreDir(home), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	check("on the home")
	serveBin(t, home)
	check("through the daemon")
}
