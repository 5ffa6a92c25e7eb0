package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
)

// The cluster harness: one etcd and several serve daemons as processes of
// their own, each in a network namespace the test makes, joined to etcd's
// namespace by a veth pair, so that a daemon can be cut off from etcd by
// taking its link down. Every address is on an interface of these
// namespaces; nothing else is ever a target. The test talks to the
// daemons over their unix sockets.

var (
	etcdServerOnce sync.Once
	etcdServerBin  string
	etcdServerErr  error
)

// etcdServer builds the test-only etcd (internal/etcdtest) once.
func etcdServer(t testing.TB) string {
	t.Helper()
	etcdServerOnce.Do(func() {
		etcdServerBin = filepath.Join(binDir, "etcd-test-server")
		etcdServerErr = testbin.BuildPure(repoRoot, "./internal/etcdtest/etcd-test-server", etcdServerBin)
	})
	if etcdServerErr != nil {
		t.Fatalf("build etcd-test-server: %v", etcdServerErr)
	}
	return etcdServerBin
}

// requireClusterHost checks what the fault test needs: root, isolation,
// network namespaces. With REQUIRE_ETCD=1 (CI) anything missing is a
// failure, as with REQUIRE_ISOLATION=1: the cluster's tests never skip
// there.
func requireClusterHost(t *testing.T) {
	t.Helper()
	requireIsolationOr(t, os.Getenv("REQUIRE_ISOLATION") == "1" || os.Getenv("REQUIRE_ETCD") == "1")
	requireNetns(t)
}

// requireNetns fails (REQUIRE_ISOLATION=1, or REQUIRE_ETCD=1) or skips
// where the test cannot make network namespaces and veth pairs.
func requireNetns(t testing.TB) {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("REQUIRE_ISOLATION") == "1" || os.Getenv("REQUIRE_ETCD") == "1" {
			t.Fatalf("the cluster fault test needs %s", why)
		}
		t.Skipf("cluster fault test: %s", why)
	}
	if os.Geteuid() != 0 {
		missing("root")
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(tool + " (iproute2, util-linux)")
		}
	}
}

// netLab is the test's namespaces: etcd's and one per daemon. The
// cluster tests run side by side (t.Parallel): each lab has names of its
// own (namespaces, the daemons' cgroups) and a bin dir of its own, whose
// worker processes are the only ones its leak check looks for.
type netLab struct {
	t      testing.TB
	prefix string
	hosts  int
	binDir string // nox-worker and sandbox-gate, hard links of the run's
}

// labs counts the labs of this run, for their names.
var labs atomic.Int32

func (l *netLab) etcdNS() string        { return l.prefix + "-etcd" }
func (l *netLab) hostNS(i int) string   { return fmt.Sprintf("%s-d%d", l.prefix, i) }
func (l *netLab) etcdAddr(i int) string { return fmt.Sprintf("10.231.%d.1", i) }
func (l *netLab) hostLink(i int) string { return fmt.Sprintf("vd%d", i) }

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// newNetLab makes etcd's namespace and n host namespaces, host i linked
// to etcd's by veth pair ve<i> (10.231.i.1/30) ↔ vd<i> (10.231.i.2/30).
func newNetLab(t testing.TB, n int) *netLab {
	t.Helper()
	l := &netLab{t: t, prefix: fmt.Sprintf("cs%d-%d", os.Getpid()%100000, labs.Add(1)), hosts: n,
		binDir: filepath.Join(t.TempDir(), "bin")}
	if err := os.Mkdir(l.binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nox-worker", "sandbox-gate"} {
		if err := os.Link(filepath.Join(binDir, name), filepath.Join(l.binDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(l.remove)
	must := func(args ...string) {
		t.Helper()
		if err := ipCmd(args...); err != nil {
			t.Fatal(err)
		}
	}
	must("netns", "add", l.etcdNS())
	must("-n", l.etcdNS(), "link", "set", "lo", "up")
	for i := 1; i <= n; i++ {
		ns := l.hostNS(i)
		must("netns", "add", ns)
		must("-n", ns, "link", "set", "lo", "up")
		must("link", "add", fmt.Sprintf("ve%d", i), "netns", l.etcdNS(), "type", "veth", "peer", "name", l.hostLink(i), "netns", ns)
		must("-n", l.etcdNS(), "addr", "add", l.etcdAddr(i)+"/30", "dev", fmt.Sprintf("ve%d", i))
		must("-n", l.etcdNS(), "link", "set", fmt.Sprintf("ve%d", i), "up")
		must("-n", ns, "addr", "add", fmt.Sprintf("10.231.%d.2/30", i), "dev", l.hostLink(i))
		must("-n", ns, "link", "set", l.hostLink(i), "up")
	}
	return l
}

// cut takes host i's link to etcd down (heal brings it back).
func (l *netLab) cut(i int) error {
	return ipCmd("-n", l.hostNS(i), "link", "set", l.hostLink(i), "down")
}
func (l *netLab) heal(i int) error {
	return ipCmd("-n", l.hostNS(i), "link", "set", l.hostLink(i), "up")
}

func (l *netLab) remove() {
	for i := 1; i <= l.hosts; i++ {
		ipCmd("netns", "del", l.hostNS(i))
	}
	ipCmd("netns", "del", l.etcdNS())
}

// inNetns is the command line that runs argv in namespace ns: nsenter
// enters only the network namespace (ip netns exec would also remount
// /sys, hiding the cgroup file systems the daemon needs) and execs, so
// the process started is argv[0] itself.
func inNetns(ns string, argv ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + ns, "--"}, argv...)...)
}

// proc is a process of the cluster (etcd or a daemon) with its log.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *testenv.Buffer
	done chan struct{}
	err  error
}

func startProc(name string, cmd *exec.Cmd, log *testenv.Buffer) (*proc, error) {
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) signal(sig syscall.Signal) { p.cmd.Process.Signal(sig) }

func (p *proc) kill9() {
	p.signal(syscall.SIGCONT) // a stopped process dies as well, but be sure it can be reaped
	p.signal(syscall.SIGKILL)
	<-p.done
}

// etcdProc is the test's etcd: one member in etcd's namespace, data in
// dir, listening on every address of the namespace.
type etcdProc struct {
	*proc
	lab  *netLab
	dir  string
	logs *testenv.Buffer
}

func startEtcd(t testing.TB, lab *netLab, dir string) *etcdProc {
	t.Helper()
	e := &etcdProc{lab: lab, dir: dir, logs: &testenv.Buffer{}}
	if err := e.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if e.alive() {
			e.kill9()
		}
	})
	return e
}

func (e *etcdProc) start() error {
	cmd := inNetns(e.lab.etcdNS(), etcdServerBin, "-data-dir", e.dir, "-listen", "0.0.0.0:2379",
		"-advertise", e.lab.etcdAddr(1)+":2379", "-peer", "127.0.0.1:2380")
	p, err := startProc("etcd", cmd, e.logs)
	if err != nil {
		return err
	}
	e.proc = p
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(e.logs.String(), "ready") {
		if !p.alive() || time.Now().After(deadline) {
			return fmt.Errorf("etcd did not start: %v\n%s", p.err, e.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// restart starts etcd again on its data directory after a crash.
func (e *etcdProc) restart() error {
	e.logs.Reset()
	return e.start()
}

// clusterDaemon is one serve daemon of the cluster.
type clusterDaemon struct {
	*proc
	i      int
	host   string
	home   string
	cgroup string
	lab    *netLab
	ttl    time.Duration
	client *api.Client
	// logs keeps every boot's output (the history checker reads them).
	logs *testenv.Buffer
}

func newClusterDaemon(t testing.TB, lab *netLab, i int, ttl time.Duration) *clusterDaemon {
	t.Helper()
	home := filepath.Join(t.TempDir(), fmt.Sprintf("home%d", i))
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	d := &clusterDaemon{i: i, host: fmt.Sprintf("d%d", i), home: home, cgroup: fmt.Sprintf("%s-%s-d%d", cgroupName, lab.prefix, i),
		lab: lab, ttl: ttl, client: api.NewClient(supervisor.SocketPath(home)), logs: &testenv.Buffer{}}
	t.Cleanup(func() {
		if d.proc != nil && d.alive() {
			d.kill9()
		}
	})
	return d
}

// start runs serve and waits until its socket answers.
func (d *clusterDaemon) start() error {
	if err := d.launch(); err != nil {
		return err
	}
	return d.waitUp()
}

// launch runs serve without waiting for it.
func (d *clusterDaemon) launch() error {
	cmd := inNetns(d.lab.hostNS(d.i), supervisorBin, "--home", d.home, "--log-level", "debug", "--log-format", "json",
		"serve", "--worker", filepath.Join(d.lab.binDir, "nox-worker"), "--isolation", "required", "--slots", "2", "--pool", "0",
		"--cgroup-name", d.cgroup, "--host-id", d.host, "--lease-ttl", d.ttl.String(),
		"--store", "etcd://"+d.lab.etcdAddr(d.i)+":2379/fault")
	p, err := startProc(d.host, cmd, d.logs)
	if err != nil {
		return err
	}
	d.proc = p
	return nil
}

// waitUp waits until the daemon launched last answers on its socket.
func (d *clusterDaemon) waitUp() error {
	p := d.proc
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, err := net.Dial("unix", supervisor.SocketPath(d.home)); err == nil {
			c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := d.client.Hosts(ctx)
			cancel()
			if err == nil {
				return nil
			}
		}
		if !p.alive() {
			return fmt.Errorf("daemon %s exited: %v", d.host, p.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("daemon %s did not come up", d.host)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop asks for a clean shutdown.
func (d *clusterDaemon) stop() error {
	d.signal(syscall.SIGCONT)
	d.signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return nil
	case <-time.After(60 * time.Second):
		d.kill9()
		return fmt.Errorf("daemon %s did not stop on SIGTERM", d.host)
	}
}

// historyLines are the daemon's "history" log records (JSON).
func (d *clusterDaemon) historyLines() []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(d.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"msg":"history"`) {
			out = append(out, sc.Text())
		}
	}
	return out
}

// leftovers are the worker processes, cgroups, mounts and sockets a
// stopped daemon left on its host.
func (d *clusterDaemon) leftovers() []string {
	var out []string
	for _, g := range cgroupsNamed(d.cgroup) {
		subs, _ := os.ReadDir(g)
		for _, e := range subs {
			if e.IsDir() {
				out = append(out, "cgroup "+filepath.Join(g, e.Name()))
			}
		}
	}
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.Contains(sc.Text(), d.home) {
				out = append(out, "mount "+sc.Text())
			}
		}
		f.Close()
	}
	socks, _ := filepath.Glob(filepath.Join(launch.WorkerSocketDir(d.home), "*", "*"))
	for _, s := range socks {
		out = append(out, "socket file "+s)
	}
	return out
}

// stopEtcdLeavingNothing stops etcd, once every daemon of ds has stopped,
// and fails t unless, within 10 s, no worker process and nothing of any
// daemon (leftovers) is left on the hosts.
func stopEtcdLeavingNothing(t testing.TB, etcd *etcdProc, ds []*clusterDaemon) {
	t.Helper()
	etcd.signal(syscall.SIGTERM)
	select {
	case <-etcd.done:
	case <-time.After(30 * time.Second):
		etcd.kill9()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := workerProcs(ds[0].lab.binDir)
		for _, d := range ds {
			left = append(left, d.leftovers()...)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("left on the hosts: %v", left)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// workerProcs are live processes running the worker binary.
func workerProcs(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, p := range procs {
		exe, err := os.Readlink(p)
		if err != nil || !strings.HasPrefix(exe, dir+"/") || strings.HasSuffix(exe, "cyber-supervisor") {
			continue
		}
		if st, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat")); !isZombie(st) {
			out = append(out, "process "+p+" → "+exe)
		}
	}
	return out
}
