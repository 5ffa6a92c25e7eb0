package launch

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// A jailed worker cannot read the host's machine and boot ids; the
// launcher passes them, and names each worker itself.
func TestWorkersDescribeTheHost(t *testing.T) {
	requireIsolation(t)
	l := isolatedLauncher(t)
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
		_, desc, err := w.Describe(context.Background())
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

// Real nox-workers run as unprivileged host uids of the launcher's range,
// a different one each while they live, also when two supervisors of the
// host started them, without supplementary groups: checked from the host
// in /proc/PID/status.
func TestWorkersRunAsUnprivilegedUIDs(t *testing.T) {
	requireIsolation(t)
	// Two launchers of two homes: two supervisors of one host, whose ids
	// are exclusive only through the host-wide lease.
	launchers := []*ProcessLauncher{isolatedLauncher(t), isolatedLauncher(t)}
	seen := map[string]bool{}
	for i := range 4 {
		l := launchers[i%2]
		w, err := l.launch(context.Background(), "uid", uint32(i+1), protocol.Limits{}, "")
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close(context.Background())
		b, err := os.ReadFile("/proc/" + strconv.Itoa(w.sb.Pid()) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		st := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				st[k] = strings.TrimSpace(v)
			}
		}
		uid := strings.Fields(st["Uid"])
		gid := strings.Fields(st["Gid"])
		if len(uid) != 4 || len(gid) != 4 || uid[0] == "0" || st["Groups"] != "" {
			t.Fatalf("worker %d: Uid %q Gid %q Groups %q, want a non-zero uid and no groups", w.sb.Pid(), st["Uid"], st["Gid"], st["Groups"])
		}
		for j := range 4 {
			if uid[j] != uid[0] || gid[j] != uid[0] {
				t.Errorf("worker %d: Uid %q Gid %q, want one id everywhere", w.sb.Pid(), st["Uid"], st["Gid"])
			}
		}
		n, _ := strconv.ParseUint(uid[0], 10, 32)
		if r := l.ids.Range(); uint32(n) < r.First || uint32(n)-r.First >= r.Count {
			t.Errorf("worker uid %d outside the range %+v", n, r)
		}
		if seen[uid[0]] {
			t.Errorf("two live workers share uid %s", uid[0])
		}
		seen[uid[0]] = true
		if _, _, err := w.Describe(context.Background()); err != nil {
			t.Errorf("describe: %v", err)
		}
	}
}

// isolatedLauncher is a launcher of a home of its own, closed (and its
// cgroups checked and removed) when the test ends.
func isolatedLauncher(t *testing.T) *ProcessLauncher {
	t.Helper()
	l, err := New(context.Background(), Config{WorkerPath: workerBin, Home: t.TempDir(), Isolation: IsolationRequired})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		checkNoLeftovers(t, l.cfg.CgroupName)
		removeParentGroups(l.cfg.CgroupName)
	})
	return l
}
