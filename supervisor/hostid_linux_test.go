package supervisor

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// A jailed worker cannot read the host's machine and boot ids; the
// launcher passes them, and names each worker itself.
func TestWorkersDescribeTheHost(t *testing.T) {
	requireIsolation(t)
	home := t.TempDir()
	l, err := NewLauncher(context.Background(), LauncherConfig{WorkerPath: workerBin, Home: home, Isolation: IsolationRequired})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t.Cleanup(func() {
		checkNoLeftovers(t, l.cfg.CgroupName)
		removeParentGroups(l.cfg.CgroupName)
	})
	ids := map[string]bool{}
	for i := 0; i < 2; i++ {
		dir, err := os.MkdirTemp(l.socketDir, "describe")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		w, err := l.launch(context.Background(), "hostid", uint32(i+1), protocol.Limits{}, dir)
		if err != nil {
			t.Fatal(err)
		}
		_, desc, err := w.Client().Describe(context.Background())
		w.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct{ got, path string }{
			{desc.Executor.DeviceID, "/etc/machine-id"},
			{desc.Executor.BootID, "/proc/sys/kernel/random/boot_id"},
		} {
			if b, err := os.ReadFile(f.path); err == nil && f.got != strings.TrimSpace(string(b)) {
				t.Errorf("worker reports %q, the host's %s is %q", f.got, f.path, strings.TrimSpace(string(b)))
			}
		}
		if !strings.HasPrefix(desc.Executor.WorkerID, "nox-worker-"+l.workerTag+"-") || ids[desc.Executor.WorkerID] {
			t.Errorf("worker id %q", desc.Executor.WorkerID)
		}
		ids[desc.Executor.WorkerID] = true
	}
}
