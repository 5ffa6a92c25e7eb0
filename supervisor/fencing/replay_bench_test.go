package fencing

import (
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// workThenActs is a program that does about 2^(k+1) reduce steps of
// work (no pairs) and then calls act tag n times (n a power of two: a
// balanced tree of calls built at run time, so its depth is log n).
func workThenActs(k, n int, tag uint64) string {
	work := "[1 0]"
	if k > 0 {
		work = doubled(5, k, "[1 1]")
	}
	acts := callAct(tag)
	if n > 1 {
		lg := 0
		for 1<<lg < n {
			lg++
		}
		acts = doubled(3, lg, callAct(tag))
	}
	return "[3 [" + work + " " + acts + "]]"
}

// BenchmarkActsAfterWork is the replay benchmark (docs/fencing.md,
// "Steps"): a prog that does W = 2^21 steps of work and then K cheap
// host acts, for K = 1 and K = 1,024, and a prog of the 1,024 acts
// alone (W = 0), side by side in each iteration (under -race, 2^17 and
// 128 in the metrics named for 1,024). The store does not
// fsync here: the figure is the supervisor's CPU (the whole process:
// VM, store, signatures), not the disk's. It reports the CPU of each
// invocation, the VM steps it executed, and
//
//   - ratio = cpu(W, 1024) / cpu(W, 1);
//   - work-ratio = (cpu(W, 1024) - cpu(0, 1024)) / cpu(W, 1): the
//     invocation with 1,024 acts less what the acts cost by themselves
//     (the per-act constant, measured beside it), against the one with
//     a single act. The target is 4 at most: the work is done once,
//     not once per act;
//   - vm-ratio = vm-steps(W, 1024) / vm-steps(W, 1), the same without
//     the noise of the machine.
func BenchmarkActsAfterWork(b *testing.B) {
	h := newHarnessSync(b, false)
	h.grant(tagHost)
	h.bind()
	// doubled(5, 20) is 2^21-1 steps. Under -race (CI's smoke run of
	// every benchmark) the VM and the signatures are about ten times
	// slower, and 2^17 steps and 128 acts stand for them: the one
	// iteration took 47 s.
	w, k := 20, 1024
	if raceEnabled {
		w, k = 16, 128
	}
	install := func(src string) *store.Prog {
		p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(b, src), Acts: []uint64{tagHost}, StepLimit: 1 << 22,
			MaxInFlight: 1 << 20})
		h.must(err)
		return p
	}
	progs := []struct {
		name string
		p    *store.Prog
		acts uint64
	}{
		{"W-K1", install(workThenActs(w, 1, tagHost)), 1},
		{"W-K1024", install(workThenActs(w, k, tagHost)), uint64(k)},
		{"0-K1024", install(workThenActs(0, k, tagHost)), uint64(k)},
	}
	cpu := make([]time.Duration, len(progs))
	steps := make([]uint64, len(progs))
	b.ResetTimer()
	for i := range b.N {
		for j, pr := range progs {
			inv := h.invoke(pr.p, uint64(i))
			s0, c0 := h.e.stats.steps.Load(), cpuTime()
			got, err := h.e.Drive(ctx, inv.ID)
			cpu[j] += cpuTime() - c0
			steps[j] += h.e.stats.steps.Load() - s0
			if err != nil || got.Status != store.InvocationCompleted || got.Ordinal != pr.acts {
				b.Fatalf("%s: %v %+v", pr.name, err, got)
			}
		}
	}
	b.StopTimer()
	n := float64(b.N)
	for j, pr := range progs {
		b.ReportMetric(float64(cpu[j].Microseconds())/1000/n, "cpu-ms-"+pr.name)
		b.ReportMetric(float64(steps[j])/n, "vm-steps-"+pr.name)
	}
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "ratio")
	b.ReportMetric(float64(cpu[1]-cpu[2])/float64(cpu[0]), "work-ratio")
	b.ReportMetric(float64(steps[1])/float64(steps[0]), "vm-ratio")
}
