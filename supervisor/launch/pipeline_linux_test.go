package launch

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// A jailed worker is told whether to prove with its prover on a second
// goroutine (Config.ProvePipeline, which the daemon sets when it has two
// CPUs a slot): read from the worker's own environment in /proc. Fails
// before: workers were given no such setting.
func TestWorkersAreToldTheProvePipeline(t *testing.T) {
	requireIsolation(t)
	for _, on := range []bool{true, false} {
		l, err := New(context.Background(), Config{WorkerPath: workerBin, Home: t.TempDir(), Isolation: IsolationRequired, ProvePipeline: on})
		if err != nil {
			t.Fatal(err)
		}
		w, err := l.launch(context.Background(), "pipeline", 1, protocol.Limits{}, "")
		if err != nil {
			l.Close()
			t.Fatal(err)
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(w.sb.Pid()) + "/environ")
		w.Close(context.Background())
		l.Close()
		checkNoLeftovers(t, l.cfg.CgroupName)
		removeParentGroups(l.cfg.CgroupName)
		if err != nil {
			t.Fatal(err)
		}
		want := protocol.EnvWorkerProvePipeline + "=off"
		if on {
			want = protocol.EnvWorkerProvePipeline + "=on"
		}
		if vars := strings.Split(string(env), "\x00"); !slices.Contains(vars, want) {
			t.Errorf("ProvePipeline %v: the worker's environment %q has no %s", on, vars, want)
		}
	}
}
