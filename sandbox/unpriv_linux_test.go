package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/sandbox/internal/testplugin"
)

const envUnprivHelper = "CYBER_SANDBOX_TEST_UNPRIV"

type unprivResult struct {
	Report Report
	Probe  testplugin.Probe
	Err    string
}

// TestUnprivilegedSupervisor runs the static test binary as uid 65534 and
// lets it act as the supervisor: the sandbox must add a user namespace on
// its own and still build the jail.
func TestUnprivilegedSupervisor(t *testing.T) { forEachInit(t, unprivilegedSupervisor) }

func unprivilegedSupervisor(t *testing.T, use func(*Config)) {
	requireRoot(t)
	f := newFixture(t)
	var gc Config
	use(&gc)
	for _, d := range []string{f.work, f.sockets, f.jail} {
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(f.worker)
	cmd.Env = []string{
		envUnprivHelper + "=1",
		"SBX_WORKER=" + f.worker, "SBX_WORK=" + f.work, "SBX_SOCKETS=" + f.sockets, "SBX_JAIL=" + f.jail,
		"SBX_GATE=" + gc.GatePath,
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("unprivileged helper: %v\n%s\n%s", err, out, stderr)
	}
	var res unprivResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	if res.Err != "" {
		if strings.Contains(res.Err, "operation not permitted") || strings.Contains(res.Err, "permission denied") {
			skipOrFail(t, "unprivileged user namespaces unavailable: %s", res.Err)
		}
		t.Fatalf("unprivileged launch: %s", res.Err)
	}
	if res.Report.Namespaces&NamespaceUser == 0 || !res.Report.Jail || res.Report.LandlockABI != landlockABI() || !res.Report.Seccomp {
		t.Errorf("report %+v: want a user namespace and the jail", res.Report)
	}
	p := res.Probe
	if !p.Jailed || p.Pid != 1 || p.Uid != 0 || p.Status["CapEff"] != "0000000000000000" {
		t.Errorf("inside: jailed %v pid %d uid %d CapEff %s", p.Jailed, p.Pid, p.Uid, p.Status["CapEff"])
	}
	if p.WriteWork != "" || p.Mount == "" || p.TCPConnect == "" {
		t.Errorf("write /work %q, mount %q, tcp %q", p.WriteWork, p.Mount, p.TCPConnect)
	}
	checkSocketDirBounded(t, p, f.sockets)
}

// unprivHelper is the helper process's main.
func unprivHelper() int {
	res := unprivResult{}
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(res) }()
	cfg := Config{
		Mode:         ModeIsolated,
		WorkerPath:   os.Getenv("SBX_WORKER"),
		WorkDir:      os.Getenv("SBX_WORK"),
		SocketDir:    os.Getenv("SBX_SOCKETS"),
		JailRoot:     os.Getenv("SBX_JAIL"),
		Landlock:     LandlockBestEffort,
		Seccomp:      true,
		SeccompAllow: testPluginSyscalls,
		GatePath:     os.Getenv("SBX_GATE"),
	}
	sb, err := New(cfg)
	if err != nil {
		res.Err = err.Error()
		return 0
	}
	cc, err := sb.ClientConfig(pluginBase())
	if err != nil {
		res.Err = err.Error()
		return 0
	}
	client := newPluginClient(cc)
	defer func() {
		_ = sb.Kill(context.Background())
		client.Kill()
	}()
	rpc, err := client.Client()
	if err != nil {
		res.Err = fmt.Sprintf("launch as uid %d: %v", os.Getuid(), err)
		return 0
	}
	raw, err := rpc.Dispense(testplugin.PluginName)
	if err != nil {
		res.Err = err.Error()
		return 0
	}
	res.Probe, err = raw.(testplugin.Prober).Probe(testplugin.ProbeArgs{Intrusive: true})
	if err != nil {
		res.Err = err.Error()
	}
	res.Report = sb.Report()
	return 0
}
