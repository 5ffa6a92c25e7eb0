package api

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fenceservice"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// The CLI holds one fenceservice.Fencer: this client over a daemon's
// socket, or the fencing service in-process on a home no daemon owns.
// TestFencerParity runs one sequence of fencing operations through both,
// each on a home of its own, and compares every reply (ids, keys, times
// and signatures, which differ between two homes, renamed consistently
// or masked; refusals by their code and message). The one documented
// difference, that a daemon binds its own worker at neuron init, is
// checked as such and then evened out with a bind.
func TestFencerParity(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Config{})
	daemon := &paritySide{name: "daemon", f: ts.client, bindBeforeWait: true}
	offline := &paritySide{name: "offline", f: offlineService(t)}
	sides := []*paritySide{daemon, offline}

	// step runs fn on both sides and compares their replies.
	step := func(what string, fn func(s *paritySide) (any, error)) {
		t.Helper()
		var got [2]any
		for i, s := range sides {
			rep, err := fn(s)
			got[i] = s.normal(t, rep, err)
		}
		if !reflect.DeepEqual(got[0], got[1]) {
			a, _ := json.MarshalIndent(got[0], "", " ")
			b, _ := json.MarshalIndent(got[1], "", " ")
			t.Fatalf("%s: the daemon answered\n%s\nthe service in-process\n%s", what, a, b)
		}
	}

	// neuron init: the daemon binds its worker at once (generation 1),
	// the CLI does not: a bind evens them out.
	for _, s := range sides {
		rep, err := s.f.InitNeuron(ctx, "testnet")
		if err != nil {
			t.Fatalf("%s: neuron init: %v", s.name, err)
		}
		if bound := rep.Root.Worker != nil; bound != (s == daemon) || rep.Root.Generation != map[bool]uint64{true: 1, false: 0}[bound] {
			t.Fatalf("%s: neuron init answered generation %d, worker %v", s.name, rep.Root.Generation, rep.Root.Worker)
		}
	}
	if _, err := offline.f.Bind(ctx, 0); err != nil {
		t.Fatal(err)
	}
	step("neuron init again", func(s *paritySide) (any, error) { return s.f.InitNeuron(ctx, "testnet") })
	step("neuron show", func(s *paritySide) (any, error) { return s.f.Neuron(ctx) })
	step("acts", func(s *paritySide) (any, error) { return s.f.Acts(ctx) })
	step("grant show", func(s *paritySide) (any, error) { return s.f.Grant(ctx) })
	step("grant set, an unknown act", func(s *paritySide) (any, error) {
		return s.f.SetGrant(ctx, GrantBody{Revision: 0, Acts: []string{"nope"}})
	})
	step("grant set", func(s *paritySide) (any, error) {
		return s.f.SetGrant(ctx, GrantBody{Revision: 0, Acts: []string{"emit", "host"}})
	})
	step("grant set, a stale revision", func(s *paritySide) (any, error) {
		return s.f.SetGrant(ctx, GrantBody{Revision: 0, Acts: []string{"emit"}})
	})

	emit2 := parityBundle(t, fmt.Sprintf("[3 [[16 [[1 %d] [1 0]]] [16 [[1 %d] [1 0]]]]]", hostact.TagEmit, hostact.TagEmit))
	emit9 := parityBundle(t, fmt.Sprintf("[3 [[16 [[1 %d] [1 0]]] [1 9]]]", hostact.TagEmit))
	step("prog install", func(s *paritySide) (any, error) {
		rep, err := s.f.InstallProg(ctx, ProgBody{Bundle: emit2, Acts: []string{"emit"}})
		if err == nil {
			s.prog = rep.Prog.ID
		}
		return rep, err
	})
	step("prog install again", func(s *paritySide) (any, error) {
		return s.f.InstallProg(ctx, ProgBody{Bundle: emit2, Acts: []string{"emit"}})
	})
	step("prog install, not a bundle", func(s *paritySide) (any, error) {
		return s.f.InstallProg(ctx, ProgBody{Bundle: json.RawMessage(`{}`), Acts: []string{}})
	})
	step("prog list", func(s *paritySide) (any, error) { return s.f.Progs(ctx) })
	step("prog show", func(s *paritySide) (any, error) { return s.f.Prog(ctx, s.prog) })
	step("prog pause", func(s *paritySide) (any, error) { return s.f.PauseProg(ctx, s.prog) })
	step("invoke a paused prog", func(s *paritySide) (any, error) {
		return s.f.InvokeWith(ctx, InvokeBody{Prog: s.prog, Inputs: apitypes.U64s{5}})
	})
	step("prog resume", func(s *paritySide) (any, error) { return s.f.ResumeProg(ctx, s.prog) })

	// An invocation driven to its end: by the daemon, or by this process
	// (which binds its own worker first: the daemon's side binds too).
	step("invoke and wait", func(s *paritySide) (any, error) {
		if err := s.bindForDrive(ctx); err != nil {
			return nil, err
		}
		inv, err := s.f.InvokeWith(ctx, InvokeBody{Prog: s.prog, Inputs: apitypes.U64s{5}})
		if err != nil {
			return nil, err
		}
		s.inv = inv.ID
		return s.wait(ctx, inv.ID)
	})
	step("invocation show", func(s *paritySide) (any, error) { return s.f.Invocation(ctx, s.inv) })
	step("operation list of the invocation", func(s *paritySide) (any, error) {
		ops, err := s.f.Operations(ctx, s.inv)
		if err == nil && len(ops) > 0 {
			s.op = ops[0].ID
		}
		return ops, err
	})
	step("operation show", func(s *paritySide) (any, error) { return s.f.Operation(ctx, s.op) })
	step("invocation archive", func(s *paritySide) (any, error) { return s.f.ArchiveInvocation(ctx, s.inv) })
	step("invocation list", func(s *paritySide) (any, error) { return s.f.Invocations(ctx) })

	step("prog upgrade", func(s *paritySide) (any, error) {
		return s.f.UpgradeProg(ctx, s.prog, UpgradeBody{Revision: 1, Bundle: emit9})
	})
	step("prog upgrade again", func(s *paritySide) (any, error) {
		return s.f.UpgradeProg(ctx, s.prog, UpgradeBody{Revision: 1, Bundle: emit9})
	})
	step("prog revisions", func(s *paritySide) (any, error) { return s.f.ProgRevisions(ctx, s.prog) })

	// No worker: an invocation waits on its first act; a manual take and
	// a reconciliation move it on.
	step("placement show", func(s *paritySide) (any, error) { return s.f.Placement(ctx) })
	step("placement release", func(s *paritySide) (any, error) { return s.f.Release(ctx, 2) })
	step("placement bind, a stale generation", func(s *paritySide) (any, error) { return s.f.Bind(ctx, 2) })
	step("invoke with no worker", func(s *paritySide) (any, error) {
		inv, err := s.f.InvokeWith(ctx, InvokeBody{Prog: s.prog, Inputs: apitypes.U64s{6}})
		if err != nil {
			return nil, err
		}
		s.inv = inv.ID
		return s.until(t, ctx, inv.ID, func(v *InvocationReply) bool { return v.Pending != "" })
	})
	step("invocation rebind, an operation proposed", func(s *paritySide) (any, error) { return s.f.RebindInvocation(ctx, s.inv) })
	step("operation take", func(s *paritySide) (any, error) {
		a, err := s.f.Take(ctx, s.inv)
		if err == nil {
			s.op = a.Operation
		}
		return a, err
	})
	value, failed := "7", "no"
	step("operation reconcile, neither", func(s *paritySide) (any, error) {
		return s.f.Reconcile(ctx, s.op, ReconcileBody{Attempt: 1})
	})
	step("operation reconcile", func(s *paritySide) (any, error) {
		return s.f.Reconcile(ctx, s.op, ReconcileBody{Attempt: 1, Value: &value})
	})
	step("operation reconcile, the same again", func(s *paritySide) (any, error) {
		return s.f.Reconcile(ctx, s.op, ReconcileBody{Attempt: 1, Value: &value})
	})
	step("operation reconcile, another outcome", func(s *paritySide) (any, error) {
		return s.f.Reconcile(ctx, s.op, ReconcileBody{Attempt: 1, Failed: &failed})
	})
	step("wait for the reconciled invocation", func(s *paritySide) (any, error) {
		// Its last act is done: the bind fences nothing.
		if err := s.bindForDrive(ctx); err != nil {
			return nil, err
		}
		return s.wait(ctx, s.inv)
	})

	step("placement release again", func(s *paritySide) (any, error) { return s.f.Release(ctx, 4) })
	step("invoke to cancel", func(s *paritySide) (any, error) {
		inv, err := s.f.InvokeWith(ctx, InvokeBody{Prog: s.prog, Inputs: apitypes.U64s{7}})
		if err != nil {
			return nil, err
		}
		s.inv = inv.ID
		return s.until(t, ctx, inv.ID, func(v *InvocationReply) bool { return v.Pending != "" })
	})
	step("invocation cancel", func(s *paritySide) (any, error) { return s.f.CancelInvocation(ctx, s.inv) })
	step("invocation cancel again", func(s *paritySide) (any, error) { return s.f.CancelInvocation(ctx, s.inv) })
	step("neuron policy", func(s *paritySide) (any, error) {
		return s.f.ChangePolicy(ctx, neuron.Particle{0xab}, 2)
	})
	step("prog retire, live invocations ended", func(s *paritySide) (any, error) { return s.f.RetireProg(ctx, s.prog) })
	// The lists are in id order, which differs between two homes: they
	// are compared in the order their records were made.
	step("every operation", func(s *paritySide) (any, error) {
		ops, err := s.f.Operations(ctx, "")
		sort.Slice(ops, func(i, j int) bool { return ops[i].Created.Before(ops[j].Created) })
		return ops, err
	})
	step("every invocation", func(s *paritySide) (any, error) {
		invs, err := s.f.Invocations(ctx)
		sort.Slice(invs, func(i, j int) bool { return invs[i].Seq < invs[j].Seq })
		return invs, err
	})
}

// paritySide is one implementation of the CLI's interface with the ids
// its home gave.
type paritySide struct {
	name string
	f    fenceservice.Fencer
	// bindBeforeWait: the daemon's wait does not bind a worker, the
	// in-process one does (it drives here): bindForDrive.
	bindBeforeWait bool
	prog, inv, op  string
	// names renames the values that differ between two homes (ids,
	// keys, workers), in the order they were first seen.
	names map[string]string
}

func (s *paritySide) wait(ctx context.Context, id string) (any, error) {
	for {
		v, err := s.f.WaitInvocation(ctx, id)
		// Idle: it cannot go on by itself (an unknown attempt).
		if err != nil || store.InvocationStatus(v.Status).Terminal() || v.Idle {
			return v, err
		}
	}
}

// bindForDrive binds the daemon's worker again, as the in-process wait
// binds its own, so that both move the placement alike; before the
// invocation is made, so that the bind fences no dispatch of it.
func (s *paritySide) bindForDrive(ctx context.Context) error {
	if !s.bindBeforeWait {
		return nil
	}
	root, err := s.f.Placement(ctx)
	if err == nil {
		_, err = s.f.Bind(ctx, root.Generation)
	}
	return err
}

// until reads the invocation until ok (the daemon drives it on its own).
func (s *paritySide) until(t *testing.T, ctx context.Context, id string, ok func(*InvocationReply) bool) (any, error) {
	for {
		v, err := s.f.Invocation(ctx, id)
		if err != nil || ok(v) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// The keys whose values name something of one home (renamed in order),
// and those that are a moment or a signature (masked).
var (
	parityRenamed = map[string]bool{"id": true, "neuron": true, "public_key": true, "prog": true, "invocation": true,
		"operation": true, "parent": true, "pending": true, "children": true, "progs": true,
		"boot_id": true, "worker_id": true, "device_id": true, "boot": true}
	parityMasked = map[string]bool{"created": true, "updated": true, "recorded": true, "signature": true,
		"authorization": true, "operation_digest": true, "version": true}
	hexID = regexp.MustCompile(`[0-9a-f]{64}`)
)

// normal is a reply as compared: its JSON with the values of one home
// renamed, or the refusal's code and message (ids renamed).
func (s *paritySide) normal(t *testing.T, rep any, err error) any {
	t.Helper()
	if s.names == nil {
		s.names = map[string]string{}
	}
	if err != nil {
		e := protocol.AsError(err)
		if _, ok := fencing.AsRefusal(err); ok {
			e = fencing.ProtocolError(err)
		}
		msg := hexID.ReplaceAllStringFunc(e.Message, s.rename)
		return map[string]any{"code": string(e.Code), "message": msg}
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return s.walk(v, "")
}

func (s *paritySide) rename(v string) string {
	if v == "" {
		return v
	}
	n, ok := s.names[v]
	if !ok {
		n = fmt.Sprintf("<%d>", len(s.names))
		s.names[v] = n
	}
	return n
}

func (s *paritySide) walk(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		// In key order: the names are given in the order first seen.
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			x[k] = s.walk(x[k], k)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = s.walk(e, key)
		}
		return x
	case string:
		switch {
		case parityMasked[key]:
			return "<masked>"
		case parityRenamed[key]:
			return s.rename(x)
		}
		return hexID.ReplaceAllStringFunc(x, s.rename)
	}
	return v
}

// offlineService is the fencing service in-process on a home of its
// own, as the CLI opens it when no daemon owns the home.
func offlineService(t *testing.T) *fenceservice.Service {
	home := t.TempDir()
	st, err := bolt.Open(supervisor.StoreDir(home), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	em, err := hostact.OpenEmitter(hostact.EffectsDir(home))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	acts := hostact.NewRegistry()
	if err := hostact.Builtins(acts, em); err != nil {
		t.Fatal(err)
	}
	e, err := fencing.New(fencing.Config{Store: st.Fencing(), Trust: st.Trust(), Vault: neuron.OpenVault(neuron.VaultDir(home)), Acts: acts,
		Boot: "cli-parity", Version: "test", DeviceID: "parity"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return fenceservice.New(e, fenceservice.Offline(e))
}

func parityBundle(t *testing.T, src string) json.RawMessage {
	b, err := protocol.WrapNox("p", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
