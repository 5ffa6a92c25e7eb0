package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// initNeuron makes the home's neuron before a supervisor opens it.
func initNeuron(t *testing.T, home string) {
	t.Helper()
	st, err := bolt.Open(storeDir(home), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := fencing.New(fencing.Config{Store: st.Fencing(), Trust: st.Trust(), Vault: neuron.OpenVault(neuron.VaultDir(home)), Acts: hostact.NewRegistry(), Boot: "init"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.InitNeuron(context.Background(), "testnet"); err != nil {
		t.Fatal(err)
	}
}

// gatedLauncher holds each launch until the test lets it go.
type gatedLauncher struct {
	launch.Launcher
	entered chan string
	gate    chan struct{}
}

func (g *gatedLauncher) Launch(ctx context.Context, req launch.Request) (launch.Worker, error) {
	g.entered <- req.Job
	<-g.gate
	return g.Launcher.Launch(ctx, req)
}

// TestJobAttemptsAreClaimedBeforeTheirWorker: with a neuron, every job
// attempt is prepared at the current placement generation with its signed
// claim {job, attempt, generation, worker}, before its worker is given the
// job; an attempt whose generation moved before its launch is never
// dispatched; every boot binds a new generation.
func TestJobAttemptsAreClaimedBeforeTheirWorker(t *testing.T) {
	home := t.TempDir()
	initNeuron(t, home)
	var gl *gatedLauncher
	s := open(t, home, launch.IsolationOff, func(c *Config) {
		gl = &gatedLauncher{Launcher: c.Launcher, entered: make(chan string, 4), gate: make(chan struct{})}
		c.Launcher = gl
	})
	ctx := context.Background()
	root, err := s.Fencing().Root(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if root.Generation != 1 || root.Worker == nil || root.Worker.Executor.BootID != s.Boot() {
		t.Fatalf("the boot did not bind its worker: %+v", root)
	}
	id := s.submit(t, spec(t, "claimed", protocol.OpExecute, add2, []uint64{2, 3}, protocol.Limits{}, nil))
	<-gl.entered
	gl.gate <- struct{}{}
	st := s.wait(t, id)
	if st.Job.State != lifecycle.Accepted || len(st.Attempts) != 1 || len(st.Claims) != 1 {
		t.Fatalf("job %s: %s, %d attempts, %d claims", id, st.Job.State, len(st.Attempts), len(st.Claims))
	}
	a, c := st.Attempts[0], st.Claims[0]
	if a.Generation != 1 || c.Generation != 1 || c.Attempt != 1 || c.Job != id || c.Signature == nil ||
		c.Worker.Executor.BootID != s.Boot() || c.Worker.Machine != protocol.MachineNox || c.Worker.Network != "testnet" {
		t.Fatalf("attempt generation %d, claim %+v", a.Generation, c)
	}
	ev, _ := s.Events(ctx, id)
	claimed := false
	for _, e := range ev {
		claimed = claimed || e.Reason == "attempt prepared at generation 1, claimed"
	}
	if !claimed {
		t.Fatalf("no claim event: %+v", ev)
	}

	// The placement moves while an attempt waits for its worker: it is
	// not dispatched.
	id2 := s.submit(t, spec(t, "fenced", protocol.OpExecute, add2, []uint64{2, 3}, protocol.Limits{}, nil))
	<-gl.entered
	if _, err := s.Fencing().Release(ctx, 1); err != nil {
		t.Fatal(err)
	}
	gl.gate <- struct{}{}
	st = s.wait(t, id2)
	if st.Job.State != lifecycle.Failed || st.Job.Error.Code != protocol.CodeStaleState || len(st.Claims) != 1 || st.Claims[0].Generation != 1 {
		t.Fatalf("job of an older generation: %s %v, %d claims", st.Job.State, st.Job.Error, len(st.Claims))
	}
	if st.Attempts[0].Started != (time.Time{}) {
		t.Fatal("the fenced attempt was recorded running")
	}
	s.close(t)

	// A new boot binds a new generation (2 was the release).
	s2 := open(t, home, launch.IsolationOff, nil)
	defer s2.close(t)
	r2, err := s2.Fencing().Root(ctx)
	if err != nil || r2.Generation != 3 || r2.Worker.Executor.BootID != s2.Boot() || s2.Boot() == s.Boot() {
		t.Fatalf("second boot: %+v %v", r2, err)
	}
}

// TestJobClaimsWithoutANeuron: a home without a neuron claims attempts
// at generation 0, unsigned.
func TestJobClaimsWithoutANeuron(t *testing.T) {
	s := open(t, t.TempDir(), launch.IsolationOff, nil)
	defer s.close(t)
	id := s.submit(t, spec(t, "plain", protocol.OpExecute, add2, []uint64{1, 1}, protocol.Limits{}, nil))
	st := s.wait(t, id)
	if st.Job.State != lifecycle.Accepted || len(st.Claims) != 1 || st.Claims[0].Generation != 0 || st.Claims[0].Signature != nil {
		t.Fatalf("%s %+v", st.Job.State, st.Claims)
	}
}

// TestInvocationsAreDriven: the daemon drives an invocation through its
// acts (emit, with the embedded worker its boot bound) when asked, and
// every live one when it starts.
func TestInvocationsAreDriven(t *testing.T) {
	home := t.TempDir()
	initNeuron(t, home)
	s := open(t, home, launch.IsolationOff, nil)
	ctx := context.Background()
	e := s.Fencing()
	call := "[16 [[1 12426838746798751745] [1 0]]]"
	p := installEmitProg(t, e, "[3 ["+call+" "+call+"]]")
	inv, err := e.Invoke(ctx, p.ID, []uint64{4})
	if err != nil {
		t.Fatal(err)
	}
	s.RunInvocation(inv.ID)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := s.WaitInvocation(wctx, inv.ID)
	if err != nil || v.Status != store.InvocationCompleted || len(v.Output) != 2 || v.Output[0] != 1 || v.Output[1] != 2 {
		t.Fatalf("driven invocation: %+v %v", v, err)
	}
	// Invoked while no daemon drives it, then driven by the next start.
	inv2, err := e.Invoke(ctx, p.ID, []uint64{5})
	if err != nil {
		t.Fatal(err)
	}
	s.close(t)
	s2 := open(t, home, launch.IsolationOff, nil)
	defer s2.close(t)
	v, err = s2.WaitInvocation(wctx, inv2.ID)
	if err != nil || v.Status != store.InvocationCompleted || v.Output[0] != 3 {
		t.Fatalf("invocation driven at start: %+v %v", v, err)
	}
}

// installEmitProg grants the emit act and installs src, a prog that may
// call it.
func installEmitProg(t *testing.T, e *fencing.Engine, src string) *store.Prog {
	t.Helper()
	ctx := context.Background()
	g, err := e.Grant(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetGrant(ctx, g.Revision, fencing.GrantSpec{Acts: []uint64{hostact.TagEmit}}); err != nil {
		t.Fatal(err)
	}
	p, _, err := e.InstallProg(ctx, fencing.ProgSpec{Program: parseNoun(t, src), Acts: []uint64{hostact.TagEmit}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func parseNoun(t *testing.T, src string) noun.Noun {
	t.Helper()
	n, err := noun.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWaitInvocationSaysIdle: a daemon's wait returns, Idle, once the
// invocation has an unknown attempt and no drive of it is in flight. The
// attempt here was prepared and its token dropped, as when a dispatch is
// refused before its claim; before, the wait held it until its context
// ended (the CLI's invoke --wait polled forever).
func TestWaitInvocationSaysIdle(t *testing.T) {
	home := t.TempDir()
	initNeuron(t, home)
	s := open(t, home, launch.IsolationOff, nil)
	defer s.close(t)
	ctx := context.Background()
	e := s.Fencing()
	p := installEmitProg(t, e, "[16 [[1 12426838746798751745] [1 0]]]")
	inv, err := e.Invoke(ctx, p.ID, []uint64{4}) // not kicked: no drive runs it
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Advance(ctx, inv.ID); err != nil {
		if _, refused := fencing.AsRefusal(err); !refused {
			t.Fatal(err)
		}
	}
	if _, err := e.Prepare(ctx, inv.ID); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	v, err := s.WaitInvocation(wctx, inv.ID)
	if err != nil || !v.Idle || v.Status.Terminal() {
		t.Fatalf("wait on an invocation whose attempt nothing dispatches: %+v %v", v, err)
	}
	if len(v.Operations) != 1 || len(v.Operations[0].Attempts) != 1 || !v.Operations[0].Attempts[0].Unknown || v.Operations[0].Attempts[0].Claim != nil {
		t.Fatalf("the view: %+v", v.Operations)
	}
}
