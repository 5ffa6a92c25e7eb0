package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/sandbox/internal/testplugin"
)

// cycle is one attempt's whole launch as the supervisor does it: create
// the sandbox, go-plugin handshake through it, dispense, one trivial RPC,
// then our kill and go-plugin's Kill (teardown included).
type cycle struct {
	total, toRPC, kill  time.Duration
	del                 time.Duration // limits groups' Delete, inside kill
	childCPU            time.Duration // user+sys of the reaped gate and worker
	spawn, place, setup time.Duration
	jail, harden        time.Duration
}

func runCycle(b *testing.B, cfg Config) cycle {
	cpu0 := childrenCPU()
	begin := time.Now()
	var g *limits.Group
	if cfg.Placement != nil {
		// Created and deleted inside the measured cycle.
		g = benchGroup(b, "bench")
		cfg.Placement, cfg.KillHook = g, g.Kill
	}
	var wfs *WorkFS
	if cfg.WorkDir == "" && cfg.Mode != ModeUnisolated {
		// The supervisor's work dir: a tmpfs made and dropped per cycle
		// (an unisolated worker runs in the caller's directory).
		var err error
		if wfs, err = NewWorkFS(33<<20, 1024, *cfg.RunAs); err != nil {
			b.Fatal(err)
		}
		cfg.WorkFS = wfs
	}
	sb, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	client := pingThrough(b, sb)
	toRPC := time.Since(begin)
	rep := sb.Report()
	killBegin := time.Now()
	if err := sb.Kill(context.Background()); err != nil {
		b.Fatal(err)
	}
	client.Kill()
	if wfs != nil {
		wfs.Close()
	}
	var del time.Duration
	if g != nil {
		t := time.Now()
		if err := g.Delete(); err != nil {
			b.Fatal(err)
		}
		del = time.Since(t)
	}
	end := time.Now()
	return cycle{total: end.Sub(begin), toRPC: toRPC, kill: end.Sub(killBegin), del: del, childCPU: childrenCPU() - cpu0,
		spawn: rep.Spawn, place: rep.Place, setup: rep.Setup, jail: rep.InitJail, harden: rep.InitHarden}
}

// pingThrough launches sb's worker through go-plugin and makes one
// trivial RPC; the caller kills both.
func pingThrough(b *testing.B, sb *Sandbox) *plugin.Client {
	cc, err := sb.ClientConfig(pluginBase())
	if err != nil {
		b.Fatal(err)
	}
	client := plugin.NewClient(cc)
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		b.Fatalf("launch: %v", err)
	}
	raw, err := rpc.Dispense(testplugin.PluginName)
	if err != nil {
		b.Fatal(err)
	}
	if got, err := raw.(testplugin.Prober).Ping("b"); err != nil || got != "pong:b" {
		b.Fatalf("Ping = %q, %v", got, err)
	}
	return client
}

// benchConfigs returns the production isolated config (namespaces, jail,
// Landlock, seccomp, rlimits, and — as root — the attempt's limits groups,
// entered through CLONE_INTO_CGROUP and v1 placement, killed through
// cgroup.kill) and the unisolated baseline.
func benchConfigs(b *testing.B) (iso, plain Config) {
	f := newFixture(b)
	iso = f.isolated()
	if os.Geteuid() == 0 {
		m, err := limits.NewManager(limits.Options{Name: "sandbox-bench-" + strconv.Itoa(os.Getpid())})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := m.Close(context.Background()); err != nil {
				b.Error(err)
			}
		})
		benchGroups.mgr = m
		iso.Placement = &testGroup{} // replaced per cycle by runCycle
	}
	plain = f.unisolated()
	// Workers run with GOMAXPROCS=1 in production (supervisor's
	// LauncherConfig.WorkerProcs); both modes get it.
	iso.Env = append(iso.Env, "GOMAXPROCS=1")
	plain.Env = append(plain.Env, "GOMAXPROCS=1")
	return iso, plain
}

// benchGroups makes the per-cycle limits groups.
var benchGroups struct {
	mgr *limits.Manager
	n   int
}

// benchGroup makes an attempt's own groups, as the supervisor makes them:
// memory (+memsw) and pids in the v1 hierarchies and a cgroup2 leaf for
// CLONE_INTO_CGROUP and cgroup.kill.
func benchGroup(b *testing.B, prefix string) *limits.Group {
	benchGroups.n++
	g, err := benchGroups.mgr.Create(fmt.Sprintf("%s-%d", prefix, benchGroups.n), limits.Spec{MemoryBytes: 256 << 20, Pids: 64})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkLaunch(b *testing.B) {
	iso, plain := benchConfigs(b)
	for _, bc := range []struct {
		name string
		cfg  Config
	}{{"isolated", iso}, {"unisolated", plain}} {
		b.Run(bc.name, func(b *testing.B) {
			for range 3 { // warm the page cache and the launcher thread
				runCycle(b, bc.cfg)
			}
			var cs []cycle
			b.ResetTimer()
			for range b.N {
				cs = append(cs, runCycle(b, bc.cfg))
			}
			b.StopTimer()
			reportCycles(b, "", cs)
		})
	}
}

// BenchmarkLaunchRatio interleaves both modes so that both see the same
// background load, and reports isolated/unisolated.
func BenchmarkLaunchRatio(b *testing.B) {
	iso, plain := benchConfigs(b)
	for range 3 {
		runCycle(b, iso)
		runCycle(b, plain)
	}
	var ci, cp []cycle
	b.ResetTimer()
	for range b.N {
		ci = append(ci, runCycle(b, iso))
		cp = append(cp, runCycle(b, plain))
	}
	b.StopTimer()
	pi := reportCycles(b, "iso-", ci)
	pp := reportCycles(b, "plain-", cp)
	for i, q := range []string{"p50", "p95", "p99"} {
		b.ReportMetric(pi[i]/pp[i], "ratio-"+q)
	}
}

// BenchmarkLaunchWorkDir interleaves the isolated launch with a bound
// host work dir as root (before issue #11) and with what the supervisor
// now does: a tmpfs made and dropped per cycle and the init's switch to
// an unprivileged uid.
func BenchmarkLaunchWorkDir(b *testing.B) {
	before, _ := benchConfigs(b)
	after := before
	after.WorkDir = ""
	after.RunAs = &Identity{UID: 65534, GID: 65534}
	for range 3 {
		runCycle(b, before)
		runCycle(b, after)
	}
	var cb, ca []cycle
	b.ResetTimer()
	for range b.N {
		cb = append(cb, runCycle(b, before))
		ca = append(ca, runCycle(b, after))
	}
	b.StopTimer()
	pb := reportCycles(b, "dir-", cb)
	pa := reportCycles(b, "tmpfs-uid-", ca)
	for i, q := range []string{"p50", "p95", "p99"} {
		b.ReportMetric(pa[i]/pb[i], "ratio-"+q)
	}
}

// reportCycles reports p50/p95/p99 of the whole cycle (and p50 of its two
// halves) in milliseconds and returns the cycle percentiles.
func reportCycles(b *testing.B, prefix string, cs []cycle) [3]float64 {
	pick := func(get func(cycle) time.Duration) []time.Duration {
		v := make([]time.Duration, len(cs))
		for i, c := range cs {
			v[i] = get(c)
		}
		return v
	}

	total := pick(func(c cycle) time.Duration { return c.total })
	toRPC := pick(func(c cycle) time.Duration { return c.toRPC })
	kill := pick(func(c cycle) time.Duration { return c.kill })
	spawn := pick(func(c cycle) time.Duration { return c.spawn })
	place := pick(func(c cycle) time.Duration { return c.place })
	setup := pick(func(c cycle) time.Duration { return c.setup })
	jail := pick(func(c cycle) time.Duration { return c.jail })
	harden := pick(func(c cycle) time.Duration { return c.harden })
	del := pick(func(c cycle) time.Duration { return c.del })
	child := pick(func(c cycle) time.Duration { return c.childCPU })
	ps := [3]float64{percentile(total, 0.50), percentile(total, 0.95), percentile(total, 0.99)}
	b.ReportMetric(ps[0], prefix+"p50-ms")
	b.ReportMetric(ps[1], prefix+"p95-ms")
	b.ReportMetric(ps[2], prefix+"p99-ms")
	b.ReportMetric(percentile(toRPC, 0.50), prefix+"rpc-p50-ms")
	b.ReportMetric(percentile(kill, 0.50), prefix+"kill-p50-ms")
	b.ReportMetric(percentile(child, 0.50), prefix+"child-cpu-p50-ms")
	if testing.Verbose() {
		b.Logf("%sn=%d cycle p50/p95/p99 %.2f/%.2f/%.2f ms; to first RPC p50/p95/p99 %.2f/%.2f/%.2f; kill p50/p95/p99 %.2f/%.2f/%.2f",
			prefix, len(cs), ps[0], ps[1], ps[2],
			percentile(toRPC, .5), percentile(toRPC, .95), percentile(toRPC, .99),
			percentile(kill, .5), percentile(kill, .95), percentile(kill, .99))
		b.Logf("%sphases p50: spawn %.2f, place %.2f, config-to-exec %.2f (jail %.2f, harden %.2f), group delete %.2f ms", prefix,
			percentile(spawn, .5), percentile(place, .5), percentile(setup, .5), percentile(jail, .5), percentile(harden, .5), percentile(del, .5))
	}
	return ps
}

// percentile is the nearest-rank q-quantile of v in milliseconds.
func percentile(v []time.Duration, q float64) float64 {
	return loadbench.Millis(loadbench.Percentile(v, q))
}

// childrenCPU is the user+sys time of this process's reaped children.
// The sandbox reaps the worker before Kill returns, so a cycle's delta is
// what its gate and worker cost (kernel work done in other contexts, such
// as a network namespace's cleanup, is not in it).
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWorkFS is the supervisor's side of a worker's tmpfs: make it,
// read its usage, open its root, close it (the superblock goes with the
// last descriptor).
func BenchmarkWorkFS(b *testing.B) {
	requireRoot(b)
	for b.Loop() {
		fs, err := NewWorkFS(33<<20, 1024, Identity{UID: 0x70000000, GID: 0x70000000})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fs.Usage(); err != nil {
			b.Fatal(err)
		}
		fd, err := fs.OpenRoot()
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
		fs.Close()
	}
}
