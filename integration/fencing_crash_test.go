package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// direct opens a home's store and engine in this process, as the CLI does
// when no daemon owns the home. It binds nothing and dispatches nothing:
// its emit is registered (so a prog may request it) but never called.
// installEmitTwice makes the home's neuron (on network), grants it the
// emit act and installs a prog that emits twice, at most maxInFlight
// invocations of it at once (0: the default).
func installEmitTwice(t *testing.T, e *fencing.Engine, network string, maxInFlight uint64) *store.Prog {
	t.Helper()
	ctx := context.Background()
	if _, _, err := e.InitNeuron(ctx, network); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetGrant(ctx, 0, fencing.GrantSpec{Acts: []uint64{hostact.TagEmit}}); err != nil {
		t.Fatal(err)
	}
	call := fmt.Sprintf("[16 [[1 %d] [1 0]]]", hostact.TagEmit)
	prog, err := noun.Parse("[3 [" + call + " " + call + "]]")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := e.InstallProg(ctx, fencing.ProgSpec{Program: prog, Acts: []uint64{hostact.TagEmit}, MaxInFlight: maxInFlight})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func direct(t *testing.T, home string) (*fencing.Engine, func()) {
	t.Helper()
	st, err := bolt.Open(filepath.Join(home, "store"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	reg := hostact.NewRegistry()
	if err := reg.Register("emit", hostact.TagEmit, func(context.Context, hostact.Call) hostact.Result {
		t.Error("the test's own engine called emit")
		return hostact.Unknown("not here")
	}); err != nil {
		t.Fatal(err)
	}
	e, err := fencing.New(fencing.Config{Store: st.Fencing(), Trust: st.Trust(), Vault: neuron.OpenVault(neuron.VaultDir(home)), Acts: reg, Boot: "test-direct"})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return e, func() { st.Close() }
}

// emitLines counts the lines of the home's emit.jsonl.
func emitLines(home string) int {
	b, _ := os.ReadFile(filepath.Join(hostact.EffectsDir(home), hostact.EmitFile))
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

// TestFencingCrashNoDuplicateEffects: serve drives 50 invocations of a
// prog that emits twice, and is killed with SIGKILL at random moments —
// often right after a new line of emit.jsonl appears, between the effect
// and its recorded outcome — over at least 20 rounds, restarted each
// time. Unknown attempts are reconciled by the owner (with the line the
// act wrote, or as failed when it wrote none), a few invocations are
// cancelled. In the end emit.jsonl never holds one operation twice,
// every line belongs to a claimed attempt, every invocation has ended,
// and no process, cgroup or socket is left.
func TestFencingCrashNoDuplicateEffects(t *testing.T) {
	requireIsolation(t)
	home := parallelHome(t)
	ctx := context.Background()
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	t.Logf("seed %d", seed)

	e, closeStore := direct(t, home)
	p := installEmitTwice(t, e, "crashnet", 64)
	var ids []string
	for i := range 50 {
		inv, err := e.Invoke(ctx, p.ID, []uint64{uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, inv.ID)
	}
	closeStore()

	reconciled, cancelled := 0, 0
	settle := func() (done bool) {
		e, closeStore := direct(t, home)
		defer closeStore()
		lines, err := hostact.ReadEmitLog(filepath.Join(hostact.EffectsDir(home), hostact.EmitFile))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		lineOf := map[string]int{}
		for i, l := range lines {
			if _, dup := lineOf[l.Operation]; dup {
				t.Fatalf("operation %s emitted twice (lines %d and %d)", l.Operation, lineOf[l.Operation], i+1)
			}
			lineOf[l.Operation] = i + 1
		}
		ops, err := e.Operations(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			for _, a := range op.Attempts {
				if n, ran := lineOf[op.ID]; ran && a.Claim == nil {
					t.Fatalf("operation %s wrote line %d without a claim", op.ID, n)
				}
				if !a.Unknown {
					continue
				}
				spec := fencing.OutcomeSpec{Failed: true, Message: "the act wrote no line"}
				if n, ran := lineOf[op.ID]; ran {
					spec = fencing.OutcomeSpec{Value: noun.Atom(uint64(n))}
				}
				if _, _, err := e.Reconcile(ctx, op.ID, a.N, spec); err != nil {
					t.Fatalf("reconcile %s: %v", op.ID, err)
				}
				reconciled++
			}
		}
		done = true
		for _, id := range ids {
			v, err := e.Invocation(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if v.Status.Terminal() {
				continue
			}
			done = false
			// Now and then the owner cancels one that holds a retained
			// outcome or waits: it ends without another effect.
			if rng.IntN(20) == 0 {
				if _, err := e.Cancel(ctx, id, "test"); err == nil {
					cancelled++
				}
			}
		}
		return done
	}

	rounds := 0
	for ; rounds < 20 || !settle(); rounds++ {
		if rounds > 200 {
			t.Fatal("the invocations did not end in 200 rounds")
		}
		base := emitLines(home)
		d := startDaemon(t, home, 1)
		if k := rng.IntN(6); k == 0 {
			time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		} else {
			// Right after the k-th new line: between the effect and its
			// outcome, or just after.
			deadline := time.Now().Add(3 * time.Second)
			for emitLines(home) < base+k && time.Now().Before(deadline) {
				time.Sleep(200 * time.Microsecond)
			}
		}
		d.kill9()
		if rounds%4 == 3 {
			settle()
		}
	}
	// A clean stop at the end: the daemon removes its socket.
	d := startDaemon(t, home, 1)
	d.stop(t)
	if _, err := os.Stat(supervisor.SocketPath(home)); !os.IsNotExist(err) {
		t.Errorf("the daemon's socket is left after a clean stop: %v", err)
	}
	e, closeStore = direct(t, home)
	defer closeStore()
	lines, err := hostact.ReadEmitLog(filepath.Join(hostact.EffectsDir(home), hostact.EmitFile))
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[store.InvocationStatus]int{}
	for _, id := range ids {
		v, err := e.Invocation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		switch v.Status {
		case store.InvocationCompleted, store.InvocationFailed, store.InvocationCancelled:
		default:
			t.Fatalf("invocation %s ended %s", id, v.Status)
		}
		statuses[v.Status]++
		if v.Status == store.InvocationCompleted {
			// Its output is the numbers of the two lines its acts wrote.
			for i, n := range v.Output {
				if n == 0 || int(n) > len(lines) || lines[n-1].Operation != v.Operations[i].ID {
					t.Fatalf("invocation %s: output %v does not name its lines", id, v.Output)
				}
			}
		}
	}
	t.Logf("%d kill -9 rounds, %d emit lines, %d attempts reconciled, %d cancelled, invocations %v",
		rounds, len(lines), reconciled, cancelled, statuses)
}
