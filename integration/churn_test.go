package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// churnProgram reads a whole program of testdata/churn.
func churnProgram(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "integration", "testdata", "churn", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestChurnFinishes: programs that run for more than 10^7 reductions,
// building pairs all the way and holding almost none (loops, counters,
// hash chains; testdata/README.md), finish through isolated workers under
// real cgroups: executed under 32 MiB and proved under 64 MiB, each
// accepted with its output. The memory guard bounded the pairs built
// before, and every one of them ended memory_exhausted.
func TestChurnFinishes(t *testing.T) {
	requireIsolation(t)
	home := parallelHome(t)
	d := startDaemon(t, home, 2)
	defer d.stop(t)
	type job struct {
		file       string
		inputs     []uint64
		output     uint64
		reductions uint64
		prove      bool
	}
	jobs := []job{
		{"loop.nox", []uint64{19}, 0, 12_582_898, true},
		{"count.nox", []uint64{19}, 1 << 19, 12_582_898, true},
		{"wrapcount.nox", []uint64{5, 18}, 5, 15_990_770, true},
		{"hashtree.nox", []uint64{7, 17}, 17227126463632773798, 11_009_976, true},
		{"hashchain.nox", []uint64{7, 18}, 16132232655704260829, 14_155_762, false},
		// The chain's certificate grows with every link: proved where it
		// fits (testdata/README.md).
		{"hashchain.nox", []uint64{7, 13}, 1750621682559593539, 442_354, true},
	}
	ctx := context.Background()
	var ids []string
	want := map[string]job{}
	for _, j := range jobs {
		ops := []protocol.Operation{protocol.OpExecute}
		if j.prove {
			ops = append(ops, protocol.OpProve)
		}
		if j.reductions == 442_354 {
			ops = ops[1:]
		}
		for _, op := range ops {
			memory := uint64(32 << 20)
			if op == protocol.OpProve {
				memory = 64 << 20
			}
			id := fmt.Sprintf("%s-%s-%d", strings.TrimSuffix(j.file, ".nox"), op, j.inputs[len(j.inputs)-1])
			b := jobSpec(t, id, op, churnProgram(t, j.file), j.inputs, protocol.Limits{MemoryBytes: memory})
			if _, err := d.client.Submit(ctx, b, 0, nil); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			want[id] = j
		}
	}
	for _, id := range ids {
		st := waitDone(t, d, id)
		a := st.Attempts[len(st.Attempts)-1]
		if st.Job.State != "accepted" {
			t.Errorf("%s: %s %+v (telemetry %+v)", id, st.Job.State, st.Job.Error, a.Telemetry)
			continue
		}
		res, err := protocol.ParseResult(st.Job.Result)
		if err != nil {
			t.Fatal(err)
		}
		j := want[id]
		if len(res.Output) != 1 || res.Output[0] != j.output || res.Reductions != j.reductions {
			t.Errorf("%s: output %v in %d reductions, want [%d] in %d", id, res.Output, res.Reductions, j.output, j.reductions)
		}
		t.Logf("%s: %d reductions in %s, peak %.1f MiB", id, res.Reductions, time.Duration(a.Telemetry.WallTimeMS)*time.Millisecond, float64(a.Telemetry.PeakMemoryBytes)/(1<<20))
	}
}

// TestGrowthStopsEarly: a program that builds data without end (a tree of
// fresh pairs) still ends memory_exhausted under 32 MiB, executed and
// proved, decided by the worker's guard (deterministic, not retried)
// rather than by the kernel's OOM kill.
func TestGrowthStopsEarly(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 2)
	defer d.stop(t)
	ctx := context.Background()
	var ids []string
	for i := range 4 {
		for _, op := range []protocol.Operation{protocol.OpExecute, protocol.OpProve} {
			id := fmt.Sprintf("grow-%s-%d", op, i)
			b := jobSpec(t, id, op, program(t, "grow.nox"), []uint64{40}, protocol.Limits{MemoryBytes: 32 << 20})
			if _, err := d.client.Submit(ctx, b, 0, nil); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		st := waitDone(t, d, id)
		a := st.Attempts[0]
		e := st.Job.Error
		if st.Job.State != "failed" || e == nil || e.Code != protocol.CodeMemoryExhausted || a.Telemetry.OOMKilled || e.Retryable ||
			!strings.Contains(e.Message, "stopped early") {
			t.Fatalf("%s: %s %+v, telemetry %+v", id, st.Job.State, e, a.Telemetry)
		}
		t.Logf("%s: stopped by the guard after %s, peak %.1f MiB", id, time.Duration(a.Telemetry.WallTimeMS)*time.Millisecond, float64(a.Telemetry.PeakMemoryBytes)/(1<<20))
	}
}
