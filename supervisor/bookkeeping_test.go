package supervisor

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// stubLauncher launches nothing: for driving the supervisor's own steps
// without workers. It declares the limits a job may ask for and none of
// the optional parts of the contract (so it refuses Prewarm).
type stubLauncher struct{}

func (stubLauncher) Capabilities() launch.Capabilities {
	return launch.Capabilities{Worker: allCaps()}
}
func (stubLauncher) Launch(context.Context, launch.Request) (launch.Worker, error) {
	return nil, errors.New("stub launcher")
}
func (stubLauncher) Prewarm() error                                    { return launch.ErrUnsupported }
func (stubLauncher) RemoveLeftovers(context.Context) ([]string, error) { return nil, nil }
func (stubLauncher) Close() error                                      { return nil }

// BenchmarkJobBookkeeping is the supervisor's own work for one trivial
// execute job, without a worker: admit and store, prepare the attempt,
// record it running, accept the result a worker would report (validate,
// produced, verified, accepted), and read the status as a waiting client
// does. It is the part of BenchmarkTrivialJobs's supervisor CPU that this
// package decides, measured without the noise of processes and cgroups.
func BenchmarkJobBookkeeping(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, Config{Home: b.TempDir(), Slots: 1, Launcher: stubLauncher{}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(ctx)
	specs := make([][]byte, b.N)
	for i := range specs {
		specs[i] = spec(b, fmt.Sprintf("b%d", i), protocol.OpExecute, add2, []uint64{uint64(i), 1}, protocol.Limits{Reductions: 100}, nil)
	}
	b.ReportAllocs()
	cpu0 := cpuTimes()
	b.ResetTimer()
	for i := range b.N {
		job, _, err := s.Submit(ctx, SubmitRequest{Spec: specs[i]})
		if err != nil {
			b.Fatal(err)
		}
		a, _, err := s.prepareNext(ctx)
		if err != nil || a == nil {
			b.Fatalf("prepare: %v", err)
		}
		sp, prog, err := s.frozenSpec(a)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.transition(ctx, a, lifecycle.Running, "worker launched", nil); err != nil {
			b.Fatal(err)
		}
		res := protocol.Result{Contract: protocol.ContractV1, JobID: sp.JobID, Attempt: a.n, Profile: sp.Profile,
			ProgramIdentity: *sp.Program.Identity, Kind: protocol.KindExecution,
			Output: []uint64{uint64(i) + 1}, Reductions: 7, Budget: sp.Limits.Reductions}
		s.accept(ctx, attemptResult{a: a, spec: sp, prog: prog, out: outcome{result: &res, wall: time.Millisecond}, log: s.log})
		s.unregister(a)
		st, err := s.Status(ctx, job.ID)
		if err != nil || st.Job.State != lifecycle.Accepted {
			b.Fatalf("%s: %v %v", job.ID, st.Job.State, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTimes().sub(cpu0).self.Microseconds())/float64(b.N), "cpu-µs/job")
}
