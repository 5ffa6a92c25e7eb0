package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

// The C init is tested through this test binary itself: built with cgo it
// carries the constructor, so re-executing it as [self, gate.Arg, "3"]
// runs the C init (the helper-process pattern without any Go code running).

func TestHeaderMatchesPackageGate(t *testing.T) {
	h, err := os.ReadFile("gate.h")
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) string {
		m := regexp.MustCompile(`#define ` + name + ` (\S+)`).FindSubmatch(h)
		if m == nil {
			t.Fatalf("gate.h has no %s", name)
		}
		return strings.Trim(string(m[1]), `"`)
	}
	if got := get("GATE_ARG"); got != gate.Arg {
		t.Errorf("GATE_ARG %q, package gate says %q", got, gate.Arg)
	}
	for name, want := range map[string]int{"GATE_EXIT_NO_CONFIG": gate.ExitNoConfig, "GATE_EXIT_SETUP": gate.ExitSetup} {
		if got := get(name); got != strconv.Itoa(want) {
			t.Errorf("%s %s, package gate says %d", name, got, want)
		}
	}
	c, err := os.ReadFile("wire.c")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c), strconv.Quote(gate.Magic)[1:len(strconv.Quote(gate.Magic))-1]) {
		t.Errorf("wire.c does not check the magic %q", gate.Magic)
	}
}

// requireC skips (or, with REQUIRE_ISOLATION=1, fails) without the C init
// or without the privileges for the namespaces it is run in.
func requireC(t testing.TB) {
	t.Helper()
	why := ""
	switch {
	case !cInit:
		why = "built without cgo: no C init in this binary"
	case os.Geteuid() != 0:
		why = "needs root for the namespaces the init runs in"
	}
	if why == "" {
		return
	}
	if os.Getenv("REQUIRE_ISOLATION") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// runC starts the C init in fresh mount, PID, UTS, IPC and network
// namespaces (whatever a config makes it do stays there), sends config
// and returns what it wrote on the gate, its combined output and exit code.
func runC(t testing.TB, config []byte) (status, output string, code int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "gate"), os.NewFile(uintptr(fds[1]), "gate-child")
	defer ours.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, gate.Arg, "3")
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Env = []string{}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWUTS |
		unix.CLONE_NEWIPC | unix.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	if _, err := ours.Write(config); err != nil && !errors.Is(err, syscall.EPIPE) {
		t.Fatal(err)
	}
	_ = unix.Shutdown(fds[0], unix.SHUT_WR)
	st, _ := io.ReadAll(ours)
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(st), out.String(), code
}

func encode(t testing.TB, c *gate.Config) []byte {
	t.Helper()
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCInitRunsNothingWithoutConfig(t *testing.T) {
	requireC(t)
	st, out, code := runC(t, nil)
	if code != gate.ExitNoConfig || st != "" {
		t.Errorf("exit %d, status %q, output %q; want %d and nothing", code, st, out, gate.ExitNoConfig)
	}
}

func TestCInitRejectsBadConfigs(t *testing.T) {
	requireC(t)
	good := encode(t, &gate.Config{Path: "/nonexistent", Args: []string{"x"}})
	rec := func(tag byte, v string) []byte {
		b := []byte{tag, byte(len(v)), 0, 0, 0}
		return append(b, v...)
	}
	cases := map[string][]byte{
		"other version":   append([]byte("CSGATE1\n"), good[8:]...),
		"garbage":         []byte("{\"v\":1}"),
		"cut short":       good[:len(good)-1],
		"unknown record":  append(append([]byte{}, good...), rec(99, "")...),
		"two paths":       append(append([]byte{}, good...), rec(1, "/y")...),
		"NUL in arg":      append(append([]byte{}, good...), rec(2, "a\x00b")...),
		"incomplete jail": append(append([]byte{}, good...), rec(6, "/r")...),
		"work dir and mount": append(append(append([]byte{}, good...), rec(8, "/a")...),
			[]byte{17, 4, 0, 0, 0, 5, 0, 0, 0}...),
		"empty work dir":  append(append([]byte{}, good...), rec(8, "")...),
		"cgroupns value":  append(append([]byte{}, good...), rec(16, "x")...),
		"identity root":   append(append([]byte{}, good...), []byte{18, 8, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0}...),
		"work mount fd 1": append(append([]byte{}, good...), []byte{17, 4, 0, 0, 0, 1, 0, 0, 0}...),
		"odd seccomp":     append(append([]byte{}, good...), rec(14, "1234567")...),
		"no program":      append([]byte(gate.Magic), rec(2, "x")...),
		"empty path":      append([]byte(gate.Magic), append(rec(1, ""), rec(2, "x")...)...),
	}
	for name, b := range cases {
		if _, err := gate.Decode(b); err == nil {
			t.Fatalf("%s: package gate accepts it; the case is wrong", name)
		}
		st, out, code := runC(t, b)
		if code != gate.ExitSetup || !strings.Contains(st, `"error":"gate: bad config`) {
			t.Errorf("%s: exit %d, status %q, output %q; want %d and a bad-config error", name, code, st, out, gate.ExitSetup)
		}
	}
}

func TestCInitReportsFailedExec(t *testing.T) {
	requireC(t)
	st, _, code := runC(t, encode(t, &gate.Config{Path: "/nonexistent", Args: []string{"x"}}))
	if code != gate.ExitSetup || !strings.Contains(st, `"error":"execve /nonexistent: No such file or directory"`) {
		t.Errorf("exit %d, status %q", code, st)
	}
}

// TestCInitExecsWithExactlyItsEnvironment: no jail and no hardening, a
// shell from the host shows the argv, environment and descriptors the
// worker would get.
func TestCInitExecsWithExactlyItsEnvironment(t *testing.T) {
	requireC(t)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	cfg := &gate.Config{Path: sh, Args: []string{"sh", "-c", `echo "$0|$A|$B"; env | sort | tr '\n' ' '; echo; ls /proc/self/fd | tr '\n' ' '`, "zero"},
		Env: []string{"A=1", "B=two words"}, Rlimits: []gate.Rlimit{{Resource: unix.RLIMIT_NOFILE, Value: 64}}, Hostname: "gate-test"}
	st, out, code := runC(t, encode(t, cfg))
	if code != 0 {
		t.Fatalf("exit %d, status %q, output %q", code, st, out)
	}
	if !strings.Contains(st, `"jail":false`) || strings.Contains(st, "error") {
		t.Errorf("status %q", st)
	}
	lines := strings.Split(out, "\n")
	if lines[0] != "zero|1|two words" {
		t.Errorf("argv/env line %q", lines[0])
	}
	if env := strings.Fields(lines[1]); len(env) < 3 || env[0] != "A=1" || env[1] != "B=two" {
		t.Errorf("environment %q, want only A and B (and what sh adds)", lines[1])
	}
	// 0, 1, 2 and the one ls opens for /proc/self/fd: fd 3 (the gate)
	// was close-on-exec.
	if fds := strings.Fields(lines[2]); len(fds) != 4 {
		t.Errorf("descriptors in the exec'd program: %q, want 0 1 2 and ls's own", lines[2])
	}
}

// FuzzCInitAgreesWithGo feeds the same bytes to package gate's Decode and
// to the C init: the C init must call a config bad exactly when Decode
// does. Accepted configs only ever name a program that does not exist.
func FuzzCInitAgreesWithGo(f *testing.F) {
	requireC(f)
	const missing = "/nonexistent-cyber-gate"
	for _, c := range []*gate.Config{
		{Path: missing, Args: []string{"x"}},
		{Path: missing, Args: []string{"x", "y"}, Env: []string{"A=1"}, Hostname: "h", Rlimits: []gate.Rlimit{{Resource: 4, Value: 0}}},
		{Path: missing, Args: []string{"x"}, Harden: true, Landlock: &gate.Landlock{ABI: 1, HandledFS: 1, Rules: []gate.LandlockRule{{Access: 1, Path: "/"}}}},
		{Path: missing, Args: []string{"x"}, Seccomp: []gate.BPF{{{Code: 6, K: 0x7fff0000}}}},
		{Path: missing, Args: []string{"x"}, CgroupNS: true},
		{Path: missing, Args: []string{"x"}, Identity: &gate.Identity{UID: 0x70000000, GID: 0x70000000}},
		{Path: missing, Args: []string{"x"}, Jail: &gate.Jail{Root: "/nonexistent-root", WorkerPath: missing, WorkMount: 9,
			Sockets: gate.Tmpfs{Bytes: 4096, Inodes: 8}, Tmp: gate.Tmpfs{Bytes: 1 << 16, Inodes: 64}}},
	} {
		f.Add(encode(f, c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			if _, _, code := runC(t, b); code != gate.ExitNoConfig {
				t.Fatalf("empty gate: exit %d, want %d", code, gate.ExitNoConfig)
			}
			return
		}
		c, err := gate.Decode(b)
		if err == nil && c.Path != missing {
			t.Skip("would exec a real program")
		}
		st, out, code := runC(t, b)
		cBad := strings.Contains(st, `"error":"gate: bad config`)
		if (err != nil) != cBad {
			t.Fatalf("Go Decode: %v; C init: exit %d, status %q, output %q", err, code, st, out)
		}
		if code == 0 {
			t.Fatalf("C init ran %q", c.Path)
		}
	})
}
