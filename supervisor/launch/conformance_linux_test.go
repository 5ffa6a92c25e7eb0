package launch_test

import (
	"context"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch/launchtest"
)

// The process launcher conforms, in each of the ways it launches: jailed
// with a warm pool, jailed launching each worker afresh, and plain
// processes (which declare less: no own work dirs, no warm pool, and no
// memory limit where cgroups are missing).
func TestProcessLauncherConforms(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  launch.Config
		root bool
	}{
		{"isolated-warm", launch.Config{Isolation: launch.IsolationRequired, PoolSize: 1}, true},
		{"isolated", launch.Config{Isolation: launch.IsolationRequired}, true},
		{"unisolated", launch.Config{Isolation: launch.IsolationOff}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.root {
				launch.RequireIsolationForTests(t)
			}
			launchtest.Run(t, launchtest.Harness{
				New: func(t *testing.T) launch.Launcher {
					cfg := c.cfg
					cfg.WorkerPath, cfg.Home = launch.WorkerBinForTests(), t.TempDir()
					l, err := launch.New(context.Background(), cfg)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { launch.RemoveParentGroupsForTests(l) })
					return l
				},
				Leftovers: func(l launch.Launcher) []string {
					return launch.LeftoversForTests(l.(*launch.ProcessLauncher))
				},
			})
		})
	}
}
