// Package testplugin is a tiny go-plugin (net/rpc, so no generated code)
// that sandbox tests run inside the jail. Its Probe RPC tries, from inside
// the worker, the things the sandbox must prevent or allow, and reports the
// raw outcomes; the tests decide what is acceptable.
package testplugin

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"
)

// Handshake is shared by the test host and the test plugin.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "CYBER_SANDBOX_TESTPLUGIN",
	MagicCookieValue: "d1f0b6c2-sandbox-testplugin",
}

// BehaviorEnv selects a misbehaviour of the plugin (passed through
// sandbox.Config.Env): "garbage" prints a non-handshake line to stdout
// first, "flood" writes 256 KiB without a newline first, "silent" never
// handshakes, "exit" exits 3 at once, "sleep" just
// sleeps (used for grandchildren).
const BehaviorEnv = "CYBER_SANDBOX_TEST_BEHAVIOR"

// PluginName is the key in the plugin map.
const PluginName = "prober"

// PluginMap is the host side plugin set.
var PluginMap = map[string]plugin.Plugin{PluginName: &ProberPlugin{}}

// startupFDs is taken before go-plugin opens anything: the descriptors the
// worker inherited.
var startupFDs = listFDs()

// ProbeArgs parametrise Probe.
type ProbeArgs struct {
	// HostPath is a host path that must not be visible inside.
	HostPath string
	// Intrusive asks for the escape attempts (mount, writes outside /work,
	// sysctl writes, setuid, ...). They run only if the worker can also see
	// for itself that it is jailed; outside a jail they would change the
	// host.
	Intrusive bool
}

// Probe is what the worker observed about itself. Error fields are "" when
// the operation succeeded.
type Probe struct {
	Pid        int
	Uid        int
	Hostname   string
	Cwd        string
	StartupFDs []string
	FDs        []string
	Env        []string
	Status     map[string]string // selected /proc/self/status lines
	Cgroup     string
	Mounts     []string // mount points from /proc/self/mountinfo
	// WorkOptions are /work's per-mount options from mountinfo.
	WorkOptions string
	Rlimits     map[string]uint64
	// Jailed is the worker's own verdict; the escape attempts below ran
	// only if it is true and the host asked for them.
	Jailed bool

	TCPConnect    string
	UDPSocket     string
	NetlinkSocket string
	UnixSocket    string
	ReadPasswd    string
	ReadHostPath  string
	WriteRoot     string
	WriteBin      string
	WriteProcSys  string
	ReadProcHost  string // a host-global proc file (the kernel's boot id)
	WriteTmp      string
	WriteWork     string
	Setuid        string
	Unshare       string
	Mount         string
	ExecShell     string
	// ExecTmp and ExecWork are the outcomes of executing a file the
	// worker wrote into /tmp or /work (a script run by /bin/worker).
	ExecTmp  string
	ExecWork string
	// Denied holds the outcome of syscalls outside the worker's seccomp
	// allowlist (and outside the test plugin's extras), by name.
	Denied map[string]string
	// SocketDirBytes and SocketDirFiles are what the worker wrote into
	// its socket dir (PLUGIN_UNIX_SOCKET_DIR) before a write or a create
	// failed with SocketDirBytesErr or SocketDirFilesErr ("" if it hit
	// the probe's cap first: fillCapBytes, fillCapFiles). The files are
	// removed again.
	SocketDirBytes    int64
	SocketDirBytesErr string
	SocketDirFiles    int
	SocketDirFilesErr string
}

// Caps of the socket dir fill: a sandbox that bounds nothing fails its
// test instead of filling the host's disk.
const (
	fillCapBytes = 8 << 20
	fillCapFiles = 1000
)

// Prober is the plugin interface.
type Prober interface {
	Ping(msg string) (string, error)
	Probe(args ProbeArgs) (Probe, error)
	// Spawn starts a grandchild in its own session that sleeps forever and
	// returns its pid as seen by the worker.
	Spawn() (int, error)
}

// ProberPlugin implements plugin.Plugin over net/rpc.
type ProberPlugin struct{ Impl Prober }

func (p *ProberPlugin) Server(*plugin.MuxBroker) (interface{}, error) {
	return &RPCServer{Impl: p.Impl}, nil
}

func (p *ProberPlugin) Client(_ *plugin.MuxBroker, c *rpc.Client) (interface{}, error) {
	return &RPCClient{c: c}, nil
}

// RPCServer is the net/rpc receiver in the worker.
type RPCServer struct{ Impl Prober }

func (s *RPCServer) Ping(msg string, resp *string) error {
	r, err := s.Impl.Ping(msg)
	*resp = r
	return err
}

func (s *RPCServer) Probe(args ProbeArgs, resp *Probe) error {
	r, err := s.Impl.Probe(args)
	*resp = r
	return err
}

func (s *RPCServer) Spawn(_ struct{}, resp *int) error {
	r, err := s.Impl.Spawn()
	*resp = r
	return err
}

// RPCClient is the host's view.
type RPCClient struct{ c *rpc.Client }

func (c *RPCClient) Ping(msg string) (string, error) {
	var r string
	err := c.c.Call("Plugin.Ping", msg, &r)
	return r, err
}

func (c *RPCClient) Probe(args ProbeArgs) (Probe, error) {
	var r Probe
	err := c.c.Call("Plugin.Probe", args, &r)
	return r, err
}

func (c *RPCClient) Spawn() (int, error) {
	var r int
	err := c.c.Call("Plugin.Spawn", struct{}{}, &r)
	return r, err
}

// MaybeServe turns the process into the test plugin when go-plugin's magic
// cookie (or the sleep behaviour) is in the environment, and never returns
// then. It returns at once otherwise.
func MaybeServe() {
	behavior := os.Getenv(BehaviorEnv)
	if behavior == "sleep" {
		for {
			time.Sleep(time.Hour)
		}
	}
	if os.Getenv(Handshake.MagicCookieKey) != Handshake.MagicCookieValue {
		return
	}
	switch behavior {
	case "garbage":
		fmt.Println("hello from a chatty worker, not a handshake")
	case "flood":
		// Longer than any line go-plugin's scanner accepts, no newline.
		_, _ = os.Stdout.Write([]byte(strings.Repeat("x", 256<<10)))
	case "silent":
		for {
			time.Sleep(time.Hour)
		}
	case "exit":
		os.Exit(3)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         map[string]plugin.Plugin{PluginName: &ProberPlugin{Impl: impl{}}},
	})
	os.Exit(0)
}

type impl struct{}

func (impl) Ping(msg string) (string, error) { return "pong:" + msg, nil }

func (impl) Spawn() (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self)
	cmd.Env = []string{BehaviorEnv + "=sleep"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	// Deliberately not waited for: it is meant to outlive the worker.
	_ = cmd.Process.Release()
	return pid, nil
}

func (impl) Probe(args ProbeArgs) (Probe, error) {
	p := Probe{
		Pid:        os.Getpid(),
		Uid:        os.Getuid(),
		StartupFDs: startupFDs,
		FDs:        listFDs(),
		Env:        os.Environ(),
		Status:     readStatus(),
		Rlimits:    map[string]uint64{},
	}
	p.Hostname, _ = os.Hostname()
	p.Cwd, _ = os.Getwd()
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		p.Cgroup = string(b)
	}
	p.Mounts, p.WorkOptions = mountPoints()
	for name, res := range map[string]int{"nofile": unix.RLIMIT_NOFILE, "fsize": unix.RLIMIT_FSIZE, "core": unix.RLIMIT_CORE} {
		var rl unix.Rlimit
		if unix.Getrlimit(res, &rl) == nil {
			p.Rlimits[name] = rl.Max
		}
	}

	p.Jailed = jailed()
	if !args.Intrusive || !p.Jailed {
		return p, nil
	}

	if c, err := net.DialTimeout("tcp", "127.0.0.1:1", time.Second); err == nil {
		c.Close()
	} else {
		p.TCPConnect = err.Error()
	}
	p.UDPSocket = trySocket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	p.NetlinkSocket = trySocket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
	p.UnixSocket = trySocket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	_, err := os.ReadFile("/etc/passwd")
	p.ReadPasswd = errString(err)
	if args.HostPath != "" {
		_, err = os.ReadDir(args.HostPath)
		p.ReadHostPath = errString(err)
	}
	p.WriteRoot = errString(os.WriteFile("/probe", []byte("x"), 0o600))
	p.WriteBin = errString(os.WriteFile("/bin/probe", []byte("x"), 0o600))
	p.WriteProcSys = errString(os.WriteFile("/proc/sys/kernel/hostname", []byte("escaped"), 0o644))
	_, err = os.ReadFile("/proc/sys/kernel/random/boot_id")
	p.ReadProcHost = errString(err)
	p.WriteTmp = errString(os.WriteFile("/tmp/probe", []byte("x"), 0o600))
	p.WriteWork = errString(os.WriteFile("/work/probe", []byte("x"), 0o600))
	p.Mount = errString(unix.Mount("tmpfs", "/tmp", "tmpfs", 0, ""))
	p.Setuid, p.Unshare = onThrowawayThread()
	p.ExecShell = errString(exec.Command("/bin/sh", "-c", "true").Run())
	p.ExecTmp = tryExecWritten("/tmp")
	p.ExecWork = tryExecWritten("/work")
	p.Denied = tryDenied()
	fillSocketDir(&p)
	return p, nil
}

// fillSocketDir writes one file into the socket dir until a write fails,
// then creates empty files until a create fails, and removes them all.
func fillSocketDir(p *Probe) {
	dir := os.Getenv("PLUGIN_UNIX_SOCKET_DIR")
	var made []string
	defer func() {
		for _, f := range made {
			os.Remove(f)
		}
	}()
	big := dir + "/fill-bytes"
	f, err := os.Create(big)
	if err == nil {
		made = append(made, big)
		chunk := make([]byte, 64<<10)
		for p.SocketDirBytes < fillCapBytes {
			var n int
			n, err = f.Write(chunk)
			p.SocketDirBytes += int64(n)
			if err != nil {
				break
			}
		}
		f.Close()
	}
	p.SocketDirBytesErr = errString(err)
	err = nil
	for p.SocketDirFiles < fillCapFiles {
		name := dir + "/fill-" + strconv.Itoa(p.SocketDirFiles)
		if f, err = os.Create(name); err != nil {
			break
		}
		f.Close()
		made = append(made, name)
		p.SocketDirFiles++
	}
	p.SocketDirFilesErr = errString(err)
}

// jailed reports whether this process sees the sandbox's jail: PID 1 of
// its namespace, the plugin socket mount, and none of a host's usual
// top-level directories.
func jailed() bool {
	if os.Getpid() != 1 {
		return false
	}
	if _, err := os.Stat("/run/plugin"); err != nil {
		return false
	}
	for _, p := range []string{"/etc", "/usr", "/var", "/home", "/root", "/sbin", "/lib"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			return false
		}
	}
	return true
}

func mountPoints() (points []string, workOptions string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []string{"error: " + err.Error()}, ""
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) > 5 {
			points = append(points, f[4])
			if f[4] == "/work" {
				workOptions = f[5]
			}
		}
	}
	return points, workOptions
}

var fdcwd = unix.AT_FDCWD

// atFDCWD is AT_FDCWD as a raw syscall argument.
var atFDCWD = uintptr(fdcwd)

// inetHighClone is AF_INET with clone's number in the high half (a
// variable: a 32-bit uintptr keeps the low half only, plain AF_INET).
var inetHighClone = uint64(unix.SYS_CLONE)<<32 | unix.AF_INET

// deniedCalls are syscalls a Go worker could make but nox-worker never
// does; each must fail with EPERM. Arguments are harmless should one pass.
var deniedCalls = map[string][4]uintptr{
	"sync":                    {unix.SYS_SYNC},
	"syncfs":                  {unix.SYS_SYNCFS, 0},
	"memfd_create":            {unix.SYS_MEMFD_CREATE, 0, 0},
	"mbind":                   {unix.SYS_MBIND},
	"msgget":                  {unix.SYS_MSGGET, 0, 0},
	"inotify_init1":           {unix.SYS_INOTIFY_INIT1, unix.IN_CLOEXEC},
	"personality":             {unix.SYS_PERSONALITY, 0xffffffff},
	"landlock_create_ruleset": {unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1},
	"mknodat":                 {unix.SYS_MKNODAT, atFDCWD, 0, unix.S_IFIFO | 0o600},
	"symlinkat":               {unix.SYS_SYMLINKAT, 0, atFDCWD, 0},
	"fchmodat":                {unix.SYS_FCHMODAT, atFDCWD, 0, 0o4755},
	// socket(2) reads its family as an int, so the kernel sees AF_INET
	// here; the filter sees a 64-bit argument whose high half is the
	// number of clone, which go-seccomp-bpf's program compared against
	// clone's number after its socket check failed, and let through.
	"socket(AF_INET, high half SYS_CLONE)": {unix.SYS_SOCKET, uintptr(inetHighClone), unix.SOCK_DGRAM, 0},
}

func tryDenied() map[string]string {
	out := map[string]string{}
	for name, c := range deniedCalls {
		r, _, e := unix.Syscall6(c[0], c[1], c[2], c[3], 0, 0, 0)
		if e == 0 && (name == "memfd_create" || name == "inotify_init1" || strings.HasPrefix(name, "socket")) {
			unix.Close(int(r))
		}
		out[name] = errnoString(e)
	}
	return out
}

// onThrowawayThread runs the identity/namespace attempts on a locked thread
// that is never unlocked, so that if one unexpectedly succeeds the changed
// thread dies with its goroutine instead of serving other goroutines.
func onThrowawayThread() (setuid, unshare string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		_, _, e := unix.RawSyscall(unix.SYS_SETUID, 1234, 0, 0)
		setuid = errnoString(e)
		_, _, e = unix.RawSyscall(unix.SYS_UNSHARE, unix.CLONE_NEWNET, 0, 0)
		unshare = errnoString(e)
	}()
	<-done
	return setuid, unshare
}

// tryExecWritten writes an executable into dir and runs it: a script
// whose interpreter is the worker binary itself, so that nothing but the
// directory decides whether it runs. A run that starts is killed at once.
func tryExecWritten(dir string) string {
	path := dir + "/written-exe"
	if err := os.WriteFile(path, []byte("#!/bin/worker\n"), 0o755); err != nil {
		return "write: " + err.Error()
	}
	defer os.Remove(path)
	cmd := exec.Command(path)
	cmd.Env = []string{BehaviorEnv + "=sleep"}
	if err := cmd.Start(); err != nil {
		return err.Error()
	}
	cmd.Process.Kill()
	cmd.Wait()
	return ""
}

func trySocket(domain, typ, proto int) string {
	fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return err.Error()
	}
	unix.Close(fd)
	return ""
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func errnoString(e syscall.Errno) string {
	if e == 0 {
		return ""
	}
	return e.Error()
}

func readStatus() map[string]string {
	out := map[string]string{}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch k {
		case "NoNewPrivs", "Seccomp", "Seccomp_filters", "CapEff", "CapBnd", "CapPrm", "Uid", "NSpid":
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// listFDs returns "fd -> target" for every open descriptor except the one
// used to list them.
func listFDs() []string {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	self := int(d.Fd())
	var out []string
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd == self {
			continue
		}
		target, _ := os.Readlink("/proc/self/fd/" + n)
		out = append(out, n+" -> "+target)
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.SplitN(out[i], " ", 2)[0])
		b, _ := strconv.Atoi(strings.SplitN(out[j], " ", 2)[0])
		return a < b
	})
	return out
}
