package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/internal/race"
	"github.com/cyberia-to/cyber-supervisor/sandbox/internal/testplugin"
)

func TestHandshakeThroughJail(t *testing.T) {
	f := newFixture(t)
	l := mustStart(t, f.isolated())

	got, err := l.prober.Ping("jail")
	if err != nil || got != "pong:jail" {
		t.Fatalf("Ping = %q, %v", got, err)
	}
	rep := l.sb.Report()
	if !rep.Gated || !rep.Jail || !rep.NoNewPrivs || !rep.CapsDropped || !rep.Seccomp {
		t.Errorf("report %+v: want gated, jail, nnp, caps dropped, seccomp", rep)
	}
	if rep.Namespaces&DefaultNamespaces != DefaultNamespaces {
		t.Errorf("namespaces %v, want at least %v", rep.Namespaces, DefaultNamespaces)
	}
	if abi := landlockABI(); rep.LandlockABI != abi {
		t.Errorf("Landlock ABI %d applied, the kernel has %d", rep.LandlockABI, abi)
	}

	pid := l.sb.Pid()
	members := nsMembers(pid)
	if len(members) == 0 {
		t.Fatalf("no process in the worker's pid namespace")
	}
	sockDir := l.sb.socketDir()
	l.stop()
	for _, p := range members {
		if alive(p) {
			t.Errorf("pid %d of the worker's namespace survived Kill", p)
		}
	}
	if _, err := os.Stat(sockDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket dir %s still there after Kill: %v", sockDir, err)
	}
}

// TestProbesInsideWorker runs the probes with every init: the worker
// binary re-executed as its own init, and sandbox-gate with its C and its
// Go init.
func TestProbesInsideWorker(t *testing.T) { forEachInit(t, probesInsideWorker) }

func probesInsideWorker(t *testing.T, use func(*Config)) {
	f := newFixture(t)
	cfg := f.isolated()
	use(&cfg)
	l := mustStart(t, cfg)
	if rep := l.sb.Report(); rep.LandlockABI < 1 || !rep.Seccomp || !rep.NoNewPrivs || !rep.CapsDropped || !rep.Jail {
		t.Errorf("report %+v: want jail, caps dropped, no_new_privs, Landlock and seccomp", rep)
	}
	p, err := l.prober.Probe(testplugin.ProbeArgs{HostPath: f.work, Intrusive: true})
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if !p.Jailed {
		t.Fatalf("the worker does not see itself jailed (pid %d, mounts %v)", p.Pid, p.Mounts)
	}

	if p.Pid != 1 {
		t.Errorf("pid inside = %d, want 1 (own PID namespace)", p.Pid)
	}
	if hostNS := readStatusField(t, l.sb.Pid(), "NSpid"); len(strings.Fields(hostNS)) != 2 {
		t.Errorf("host view NSpid %q, want <host pid> 1", hostNS)
	}
	if p.Hostname != defaultHostname {
		t.Errorf("hostname %q, want %q", p.Hostname, defaultHostname)
	}
	if p.Cwd != jailWorkDir {
		t.Errorf("cwd %q, want %s", p.Cwd, jailWorkDir)
	}
	// The jail's mount table: everything lies under these, nothing else.
	tops := map[string]bool{}
	for _, m := range p.Mounts {
		tops[strings.SplitN(strings.TrimPrefix(m, "/"), "/", 2)[0]] = true
	}
	var got []string
	for k := range tops {
		got = append(got, k)
	}
	sort.Strings(got)
	if want := []string{"", "bin", "dev", "proc", "run", "tmp", "work"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("mounts %v, want exactly /, /bin, /dev, /proc, /run, /tmp, /work", p.Mounts)
	}

	// Descriptors: only stdin, stdout and stderr were inherited. The Go
	// runtime's own netpoller (epoll, eventfd) is created in the worker.
	var startFDs []string
	for _, fd := range p.StartupFDs {
		if strings.Contains(fd, "anon_inode:[eventpoll]") || strings.Contains(fd, "anon_inode:[eventfd]") {
			continue
		}
		startFDs = append(startFDs, strings.SplitN(fd, " ", 2)[0])
	}
	if strings.Join(startFDs, ",") != "0,1,2" {
		t.Errorf("inherited descriptors %v, want only 0,1,2", p.StartupFDs)
	}

	// Environment: only the cookie and go-plugin's variables.
	env := map[string]string{}
	for _, kv := range p.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
		if k != testplugin.Handshake.MagicCookieKey && !strings.HasPrefix(k, "PLUGIN_") {
			t.Errorf("unexpected variable in the worker: %s", kv)
		}
	}
	if env[envSocketDir] != jailSocketDir {
		t.Errorf("%s=%q, want %s", envSocketDir, env[envSocketDir], jailSocketDir)
	}

	if p.Status["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs %q, want 1", p.Status["NoNewPrivs"])
	}
	if p.Status["Seccomp"] != "2" {
		t.Errorf("Seccomp %q, want 2 (filter)", p.Status["Seccomp"])
	}
	for _, k := range []string{"CapEff", "CapPrm", "CapBnd"} {
		if p.Status[k] != "0000000000000000" {
			t.Errorf("%s %q, want no capabilities", k, p.Status[k])
		}
	}
	if p.Rlimits["nofile"] != 256 || p.Rlimits["fsize"] != 64<<20 || p.Rlimits["core"] != 0 {
		t.Errorf("rlimits %v, want nofile 256, fsize 64MiB, core 0", p.Rlimits)
	}

	mustFail := map[string]string{
		"TCP connect to 127.0.0.1":     p.TCPConnect,
		"UDP socket":                   p.UDPSocket,
		"netlink socket":               p.NetlinkSocket,
		"read /etc/passwd":             p.ReadPasswd,
		"read the host's work dir":     p.ReadHostPath,
		"write /":                      p.WriteRoot,
		"write /bin":                   p.WriteBin,
		"write /proc/sys":              p.WriteProcSys,
		"read the host's boot id":      p.ReadProcHost, // proc mounted subset=pid (Linux >= 5.8)
		"mount":                        p.Mount,
		"setuid":                       p.Setuid,
		"unshare(CLONE_NEWNET)":        p.Unshare,
		"exec /bin/sh (host program)":  p.ExecShell,
		"exec a file written to /tmp":  p.ExecTmp,
		"exec a file written to /work": p.ExecWork,
	}
	for what, errText := range mustFail {
		if errText == "" {
			t.Errorf("%s succeeded inside the worker", what)
		}
	}
	for _, opt := range []string{"nosuid", "nodev", "noexec"} {
		if !strings.Contains(","+p.WorkOptions+",", ","+opt+",") {
			t.Errorf("/work mounted %q, want %s", p.WorkOptions, opt)
		}
	}
	if len(p.Denied) == 0 {
		t.Error("the probe tried no denied syscall")
	}
	for name, errText := range p.Denied {
		if errText != "operation not permitted" {
			t.Errorf("%s inside the worker: %q, want EPERM from seccomp", name, errText)
		}
	}
	for what, errText := range map[string]string{"mount": p.Mount, "setuid": p.Setuid, "unshare": p.Unshare, "TCP socket": p.TCPConnect} {
		if !strings.Contains(errText, "operation not permitted") {
			t.Errorf("%s: %q, want a clean EPERM", what, errText)
		}
	}
	mustWork := map[string]string{
		"unix socket": p.UnixSocket,
		"write /tmp":  p.WriteTmp,
		"write /work": p.WriteWork,
	}
	for what, errText := range mustWork {
		if errText != "" {
			t.Errorf("%s failed inside the worker: %s", what, errText)
		}
	}
	if b, err := os.ReadFile(filepath.Join(f.work, "probe")); err != nil || string(b) != "x" {
		t.Errorf("file written to /work not in the host work dir: %q, %v", b, err)
	}
	checkSocketDirBounded(t, p, l.sb.socketDir())
}

// checkSocketDirBounded: the worker filled its socket dir up to one page
// and SocketDirInodes inodes (the directory itself and its socket among
// them) and got ENOSPC, and none of it reached the host's socket dir
// (hostDir, "" when the test cannot see it).
func checkSocketDirBounded(t *testing.T, p testplugin.Probe, hostDir string) {
	t.Helper()
	const enospc = "no space left on device"
	if page := int64(max(os.Getpagesize(), SocketDirBytes)); p.SocketDirBytes > page || !strings.Contains(p.SocketDirBytesErr, enospc) {
		t.Errorf("the worker wrote %d bytes into its socket dir, then %q; want ENOSPC within %d", p.SocketDirBytes, p.SocketDirBytesErr, page)
	}
	if p.SocketDirFiles > SocketDirInodes-2 || !strings.Contains(p.SocketDirFilesErr, enospc) {
		t.Errorf("the worker made %d files in its socket dir, then %q; want ENOSPC within %d", p.SocketDirFiles, p.SocketDirFilesErr, SocketDirInodes-2)
	}
	if hostDir == "" {
		return
	}
	if ents, err := os.ReadDir(hostDir); err != nil || len(ents) != 0 {
		t.Errorf("the host's socket dir %s holds %d entries (%v), want none: the worker's socket is in its jail", hostDir, len(ents), err)
	}
}

func TestGarbageOnStdoutFailsCleanly(t *testing.T) {
	for _, behavior := range []string{"garbage", "flood"} {
		t.Run(behavior, func(t *testing.T) {
			f := newFixture(t)
			cfg := f.isolated()
			cfg.Env = []string{testplugin.BehaviorEnv + "=" + behavior}
			begin := time.Now()
			_, err := start(t, cfg)
			if err == nil {
				t.Fatal("launch succeeded although the worker wrote garbage before the handshake")
			}
			if !strings.Contains(err.Error(), "Unrecognized remote plugin message") {
				t.Errorf("error %.200q, want go-plugin's unrecognized message", err)
			}
			if d := time.Since(begin); d > race.Bound(3*time.Second) {
				t.Errorf("failed start took %v", d)
			}
		})
	}
}

func TestSilentWorkerTimesOut(t *testing.T) {
	f := newFixture(t)
	cfg := f.isolated()
	cfg.Env = []string{testplugin.BehaviorEnv + "=silent"}
	cfg.StartTimeout = 300 * time.Millisecond
	begin := time.Now()
	_, err := start(t, cfg)
	// The start timeout strikes wherever the start is: in go-plugin's
	// handshake ("timeout"), or, on a loaded host, still at the gate
	// (reading the init's status: the context's deadline).
	if err == nil || !(strings.Contains(err.Error(), "timeout") || errors.Is(err, context.DeadlineExceeded)) {
		t.Fatalf("err = %v, want a start timeout", err)
	}
	if d := time.Since(begin); d > race.Bound(2*time.Second) {
		t.Errorf("timed-out start took %v", d)
	}
}

func TestWorkerExitingEarly(t *testing.T) {
	f := newFixture(t)
	cfg := f.isolated()
	cfg.Env = []string{testplugin.BehaviorEnv + "=exit"}
	if _, err := start(t, cfg); err == nil {
		t.Fatal("launch succeeded although the worker exited")
	}
}

func TestSetupFailureIsReported(t *testing.T) { forEachInit(t, setupFailureIsReported) }

func setupFailureIsReported(t *testing.T, use func(*Config)) {
	f := newFixture(t)
	cfg := f.isolated()
	use(&cfg)
	// The work dir vanishes between validation and launch: the bind in the
	// init fails and must come back as ErrSetup, not as a handshake error.
	cfg2 := cfg
	gone := filepath.Join(f.work, "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg2.WorkDir = gone
	s2, err := New(cfg2)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(gone)
	_, err = startSandbox(t, s2)
	if !errors.Is(err, ErrSetup) {
		t.Fatalf("err = %v, want ErrSetup", err)
	}
	if !strings.Contains(err.Error(), "bind") {
		t.Errorf("err %q does not name the failing step", err)
	}
}

func TestGateWithoutConfigRunsNothing(t *testing.T) { forEachInit(t, gateWithoutConfigRunsNothing) }

func gateWithoutConfigRunsNothing(t *testing.T, use func(*Config)) {
	f := newFixture(t)
	cfg := f.isolated()
	use(&cfg)
	cfg = cfg.withDefaults()
	gp, err := spawnGated(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	pid := gp.cmd.Process.Pid
	// The gated process execs the init and waits at the gate.
	args := execedComm(pid)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(args, initArg) && time.Now().Before(deadline); args = procComm(pid) {
		time.Sleep(time.Millisecond)
	}
	if !strings.Contains(args, initArg) {
		t.Errorf("gated process runs %q, want the init", args)
	}
	// The supervisor gives up: close the gate without a config.
	gp.gate.Close()
	err = gp.cmd.Wait()
	owned.release(pid)
	gp.stdout.Close()
	gp.stderr.Close()
	var ee interface{ ExitCode() int }
	if !errors.As(err, &ee) || ee.ExitCode() != initExitNoConfig {
		t.Fatalf("init exit = %v, want code %d", err, initExitNoConfig)
	}
	if ents, _ := os.ReadDir(f.work); len(ents) != 0 {
		t.Errorf("work dir touched by a worker that must not have run: %v", ents)
	}
}

func TestPlacementBeforeCodeAndCgroupKill(t *testing.T) {
	forEachInit(t, placementBeforeCodeAndCgroupKill)
}

func placementBeforeCodeAndCgroupKill(t *testing.T, use func(*Config)) {
	f := newFixture(t)
	g := newTestGroup(t)
	cfg := f.isolated()
	use(&cfg)
	cfg.Placement = g
	cfg.KillHook = g.kill
	l := mustStart(t, cfg)

	g.mu.Lock()
	placedPid, placedArgs := g.placedPid, g.placedArgs
	g.mu.Unlock()
	if placedPid != l.sb.Pid() {
		t.Errorf("Place got pid %d, want %d", placedPid, l.sb.Pid())
	}
	if !strings.Contains(placedArgs, initArg) {
		t.Errorf("at Place the process ran %q, want the gated init", placedArgs)
	}
	if !l.sb.Report().Placed {
		t.Error("report does not say placed")
	}
	p, err := l.prober.Probe(testplugin.ProbeArgs{})
	if err != nil {
		t.Fatal(err)
	}
	checkCgroupView(t, l.sb.Pid(), p.Cgroup, g.name())
	if _, err := l.prober.Spawn(); err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	if !g.populated() {
		t.Fatal("group not populated")
	}
	l.stop()
	if g.populated() {
		t.Error("group still populated after Kill")
	}
}

func TestKillIsFastIdempotentAndTakesTheTree(t *testing.T) {
	f := newFixture(t)
	l := mustStart(t, f.isolated())
	if _, err := l.prober.Spawn(); err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	members := nsMembers(l.sb.Pid())
	if len(members) < 2 {
		t.Fatalf("want worker and grandchild in the namespace, got %v", members)
	}

	begin := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.sb.Kill(context.Background())
		}()
	}
	wg.Wait()
	killTook := time.Since(begin)
	for i, err := range errs {
		if err != nil {
			t.Errorf("Kill #%d: %v", i, err)
		}
	}
	if killTook > race.Bound(time.Second) {
		t.Errorf("Kill took %v", killTook)
	}
	// go-plugin's own Kill waits up to 2 s for a graceful exit unless it
	// has seen the process end: after ours it must have, so that its Kill
	// is at once (a fact, not a wall-clock bound).
	for deadline := time.Now().Add(30 * time.Second); !l.client.Exited(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("go-plugin has not seen the worker end after our Kill")
		}
	}
	l.client.Kill()
	for _, p := range members {
		if alive(p) {
			t.Errorf("pid %d survived", p)
		}
	}
	if err := l.sb.Kill(context.Background()); err != nil {
		t.Errorf("Kill after Kill: %v", err)
	}
}

func TestKillBeforeStart(t *testing.T) {
	f := newFixture(t)
	sb, err := New(f.isolated())
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := startSandbox(t, sb); !errors.Is(err, ErrKilled) {
		t.Fatalf("start after Kill: %v, want ErrKilled", err)
	}
}

func TestUnisolatedMode(t *testing.T) {
	f := newFixture(t)
	l := mustStart(t, f.unisolated())
	if got, err := l.prober.Ping("plain"); err != nil || got != "pong:plain" {
		t.Fatalf("Ping = %q, %v", got, err)
	}
	p, err := l.prober.Probe(testplugin.ProbeArgs{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Jailed {
		t.Fatal("an unisolated worker claims to be jailed")
	}
	if p.Pid == 1 || p.Pid != l.sb.Pid() {
		t.Errorf("pid %d: the unisolated worker runs in the host namespace as %d", p.Pid, l.sb.Pid())
	}
	for _, kv := range p.Env {
		k, _, _ := strings.Cut(kv, "=")
		if k != testplugin.Handshake.MagicCookieKey && !strings.HasPrefix(k, "PLUGIN_") {
			t.Errorf("unexpected variable in the unisolated worker: %s", kv)
		}
	}
	if rep := l.sb.Report(); rep.Gated || rep.Jail || rep.Mode != ModeUnisolated {
		t.Errorf("report %+v", rep)
	}
}

func TestUnisolatedWithPlacementUsesTheGate(t *testing.T) {
	f := newFixture(t)
	g := newTestGroup(t)
	cfg := f.unisolated()
	cfg.GatePath = testGate(t)
	cfg.Placement = g
	cfg.KillHook = g.kill
	cfg.Rlimits = Rlimits{NoFile: 100}
	l := mustStart(t, cfg)
	g.mu.Lock()
	placedArgs := g.placedArgs
	g.mu.Unlock()
	if !strings.Contains(placedArgs, initArg) {
		t.Errorf("at Place the process ran %q, want the gated init", placedArgs)
	}
	p, err := l.prober.Probe(testplugin.ProbeArgs{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Rlimits["nofile"] != 100 {
		t.Errorf("nofile %d, want 100", p.Rlimits["nofile"])
	}
	// A grandchild in its own session escapes kill(-pgid); the cgroup kill
	// must still take it.
	if _, err := l.prober.Spawn(); err != nil {
		t.Fatal(err)
	}
	l.stop()
	if g.populated() {
		t.Error("group still populated after Kill")
	}
}

// TestRunAsSwitchesIdentity: a root supervisor's worker runs as RunAs on
// the host and inside, without capabilities or supplementary groups, and
// what it writes belongs to that uid. No user namespace is made (its
// cost is a full fork of the supervisor: Go forks without CLONE_VM then).
func TestRunAsSwitchesIdentity(t *testing.T) { forEachInit(t, runAsSwitchesIdentity) }

func runAsSwitchesIdentity(t *testing.T, use func(*Config)) {
	requireRoot(t)
	f := newFixture(t)
	if err := os.Chown(f.work, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cfg := f.isolated()
	use(&cfg)
	cfg.RunAs = &Identity{UID: 65534, GID: 65534}
	l := mustStart(t, cfg)
	if l.sb.Report().Namespaces&NamespaceUser != 0 {
		t.Error("a user namespace with RunAs under a root supervisor")
	}
	for _, key := range []string{"Uid", "Gid"} {
		if got := readStatusField(t, l.sb.Pid(), key); strings.Join(strings.Fields(got), " ") != "65534 65534 65534 65534" {
			t.Errorf("host view of the worker's %s: %q, want 65534 everywhere", key, got)
		}
	}
	if got := readStatusField(t, l.sb.Pid(), "Groups"); got != "" {
		t.Errorf("worker's supplementary groups %q, want none", got)
	}
	p, err := l.prober.Probe(testplugin.ProbeArgs{Intrusive: true})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Jailed {
		t.Fatal("the worker does not see itself jailed")
	}
	if p.Uid != 65534 || p.Status["CapEff"] != "0000000000000000" || p.Status["CapBnd"] != "0000000000000000" {
		t.Errorf("inside: uid %d CapEff %s CapBnd %s, want 65534 without capabilities", p.Uid, p.Status["CapEff"], p.Status["CapBnd"])
	}
	if p.WriteWork != "" {
		t.Fatalf("write /work: %s", p.WriteWork)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(f.work, "probe"), &st); err != nil || st.Uid != 65534 {
		t.Errorf("file written inside is owned by %d on the host (%v), want 65534", st.Uid, err)
	}
	if p.Mount == "" || p.Unshare == "" || p.Setuid == "" {
		t.Error("mount/unshare/setuid succeeded as RunAs")
	}
}

func checkCgroupView(t *testing.T, pid int, inside, group string) {
	t.Helper()
	host, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(host), "0::"+group) {
		t.Errorf("host view of the worker's cgroup %q, want %s", host, group)
	}
	lines := strings.Split(strings.TrimSpace(inside), "\n")
	for _, l := range lines {
		if !strings.HasSuffix(l, ":/") {
			t.Errorf("worker's /proc/self/cgroup line %q shows a path (all: %q)", l, inside)
		}
	}
	if len(lines) == 0 || inside == "" {
		t.Error("worker read no /proc/self/cgroup")
	}
}

func readStatusField(t testing.TB, pid int, key string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("read status of %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestWorkFSIsTheWorkersWorkDir: with a WorkFS the worker's /work is that
// tmpfs (nosuid, nodev, noexec, its root the worker's), what it writes is
// read through the WorkFS on the host and is in no host directory, and
// the bound is the tmpfs's size.
func TestWorkFSIsTheWorkersWorkDir(t *testing.T) { forEachInit(t, workFSIsTheWorkersWorkDir) }

func workFSIsTheWorkersWorkDir(t *testing.T, use func(*Config)) {
	requireRoot(t)
	f := newFixture(t)
	cfg := f.isolated()
	use(&cfg)
	id := Identity{UID: 65534, GID: 65534}
	fs, err := NewWorkFS(1<<20, 16, id)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	cfg.WorkDir, cfg.WorkFS, cfg.RunAs = "", fs, &id
	l := mustStart(t, cfg)
	p, err := l.prober.Probe(testplugin.ProbeArgs{Intrusive: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.WriteWork != "" {
		t.Fatalf("write /work: %s", p.WriteWork)
	}
	for _, opt := range []string{"nosuid", "nodev", "noexec"} {
		if !strings.Contains(","+p.WorkOptions+",", ","+opt+",") {
			t.Errorf("/work mounted %q, want %s", p.WorkOptions, opt)
		}
	}
	root, err := fs.OpenRoot()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)
	fd, err := unix.Openat(root, "probe", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("the worker's file is not in its WorkFS: %v", err)
	}
	var st unix.Stat_t
	unix.Fstat(fd, &st)
	buf := make([]byte, 8)
	n, _ := unix.Read(fd, buf)
	unix.Close(fd)
	if string(buf[:n]) != "x" || st.Uid != 65534 {
		t.Errorf("read %q owned by %d, want \"x\" of 65534", buf[:n], st.Uid)
	}
	if ents, _ := os.ReadDir(f.work); len(ents) != 0 {
		t.Errorf("the host work dir holds %v; the worker wrote to its tmpfs only", ents)
	}
	u, err := fs.Usage()
	if err != nil || u.SizeBytes != 1<<20 || u.Full() {
		t.Errorf("usage %+v (%v), want 1 MiB and not full", u, err)
	}
	if err := fs.Resize(2 << 20); err != nil {
		t.Errorf("resize: %v", err)
	}
	if u, _ := fs.Usage(); u.SizeBytes != 2<<20 {
		t.Errorf("size after resize %d", u.SizeBytes)
	}
	l.stop()
}
