package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// fenceTarget is where a neuron, grant, placement, prog, invoke,
// invocation or operation command acts: through the daemon's API when a
// daemon owns the home, directly on the home otherwise (its store, its
// vault, the built-in acts, a boot of this process's own). Both give the
// same answers (the API's types).
type fenceTarget struct {
	dm   *daemon
	e    *fencing.Engine
	em   *hostact.Emitter
	st   *store.Bolt
	home string
}

// fence opens the command's target; close it with done. Only a command
// that makesHome (neuron init) makes a home that has no store yet: every
// other one needs a record that only a store holds, so on a home with no
// store (a mistyped --home) it is ErrNoStore (no_store) and nothing is
// made, as gc and store check answer.
func (a *app) fence(makesHome bool) (*fenceTarget, error) {
	if dm, err := a.dialDaemon(); err == nil {
		return &fenceTarget{dm: dm, home: dm.home}, nil
	}
	home, err := supervisor.ResolveHome(a.home)
	if err != nil {
		return nil, err
	}
	if !makesHome {
		if err := store.Exists(supervisor.StorePath(home)); err != nil {
			return nil, err
		}
	}
	st, err := store.OpenBolt(supervisor.StoreDir(home), 200*time.Millisecond)
	if err != nil {
		return nil, err
	}
	em, err := hostact.OpenEmitter(hostact.EffectsDir(home))
	if err != nil {
		st.Close()
		return nil, err
	}
	acts := hostact.NewRegistry()
	if err := hostact.Builtins(acts, em); err != nil {
		em.Close()
		st.Close()
		return nil, err
	}
	var b [8]byte
	rand.Read(b[:])
	e, err := fencing.New(fencing.Config{Store: st, Vault: neuron.OpenVault(neuron.VaultDir(home)), Acts: acts,
		Boot: "cli-" + hex.EncodeToString(b[:]), Version: versionString(), DeviceID: machineID(), Logger: a.logger("warn")})
	if err != nil {
		em.Close()
		st.Close()
		return nil, err
	}
	f := &fenceTarget{e: e, em: em, st: st, home: home}
	// A store older than its home (a backup put back) is fenced by a
	// start, never here: nothing may be dispatched on it before.
	reasons, err := supervisor.RestoreUnfenced(context.Background(), home, st, em)
	if err == nil && len(reasons) > 0 {
		err = protocol.Errorf(protocol.CodeStaleState, "the store is older than its home (%s) and is not fenced yet: start the daemon once (cyber-supervisor serve), which fences it (docs/store.md, Recovering)",
			protocol.SafeMessage(strings.Join(reasons, "; ")))
	}
	if err != nil {
		f.done()
		return nil, err
	}
	return f, nil
}

func (f *fenceTarget) done() {
	if f.st != nil {
		f.e.Close()
		f.em.Close()
		f.st.Close()
	}
}

// daemonErr maps an answer's error through the daemon's socket.
func (f *fenceTarget) err(err error) error {
	if err == nil {
		return nil
	}
	if f.dm != nil {
		return f.dm.err(err)
	}
	// The engine's refusals carry their contract code (docs/fencing.md,
	// "Refusals").
	if _, ok := fencing.AsRefusal(err); ok {
		return fencing.ProtocolError(err)
	}
	return err
}

func (f *fenceTarget) neuron(ctx context.Context) (*api.NeuronReply, error) {
	if f.dm != nil {
		r, err := f.dm.Neuron(ctx)
		return r, f.err(err)
	}
	root, err := f.e.Root(ctx)
	if err != nil {
		return nil, f.err(err)
	}
	g, err := f.e.Grant(ctx)
	if err != nil {
		return nil, f.err(err)
	}
	return &api.NeuronReply{Root: root, Grant: g, Worker: f.e.Descriptor(root.Network)}, nil
}

func (f *fenceTarget) initNeuron(ctx context.Context, network string) (*api.NeuronReply, error) {
	if f.dm != nil {
		r, err := f.dm.InitNeuron(ctx, network)
		return r, f.err(err)
	}
	if _, _, err := f.e.InitNeuron(ctx, network); err != nil {
		return nil, f.err(err)
	}
	return f.neuron(ctx)
}

func (f *fenceTarget) resolveActs(ctx context.Context, list string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	if f.e != nil {
		if _, err := f.e.Acts().ResolveList(list); err != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidJob, "--acts: %s", protocol.SafeMessage(err.Error()))
		}
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

func (f *fenceTarget) setGrant(ctx context.Context, body api.GrantBody) (*store.Grant, error) {
	if f.dm != nil {
		g, err := f.dm.SetGrant(ctx, body)
		return g, f.err(err)
	}
	tags, err := f.e.Acts().ResolveList(strings.Join(body.Acts, ","))
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "--acts: %s", protocol.SafeMessage(err.Error()))
	}
	g, err := f.e.SetGrant(ctx, body.Revision, fencing.GrantSpec{Acts: tags, Progs: body.Progs, Disabled: body.Disabled})
	return g, f.err(err)
}

func (f *fenceTarget) place(ctx context.Context, bind bool, gen uint64) (*store.Root, error) {
	var r *store.Root
	var err error
	switch {
	case f.dm != nil && bind:
		r, err = f.dm.Bind(ctx, gen)
	case f.dm != nil:
		r, err = f.dm.Release(ctx, gen)
	case bind:
		r, err = f.e.Bind(ctx, gen)
	default:
		r, err = f.e.Release(ctx, gen)
	}
	return r, f.err(err)
}

func (f *fenceTarget) installProg(ctx context.Context, body api.ProgBody) (*api.ProgReply, error) {
	if f.dm != nil {
		r, err := f.dm.InstallProg(ctx, body)
		return r, f.err(err)
	}
	tags, err := f.e.Acts().ResolveList(strings.Join(body.Acts, ","))
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "--acts: %s", protocol.SafeMessage(err.Error()))
	}
	spec, err := api.ProgSpecOf(body.Bundle, tags, body.StepLimit, body.MaxInFlight)
	if err != nil {
		return nil, err
	}
	p, created, err := f.e.InstallProg(ctx, spec)
	if err != nil {
		return nil, f.err(err)
	}
	return &api.ProgReply{Prog: p, Created: created}, nil
}

func (f *fenceTarget) upgradeProg(ctx context.Context, id string, body api.UpgradeBody) (*api.ProgReply, error) {
	if f.dm != nil {
		r, err := f.dm.UpgradeProg(ctx, id, body)
		return r, f.err(err)
	}
	var tags []uint64 // nil: the current revision's acts
	if body.Acts != nil {
		var err error
		if tags, err = f.e.Acts().ResolveList(strings.Join(body.Acts, ",")); err != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidJob, "--acts: %s", protocol.SafeMessage(err.Error()))
		}
		if tags == nil {
			tags = []uint64{}
		}
	}
	spec, err := api.ProgSpecOf(body.Bundle, tags, body.StepLimit, body.MaxInFlight)
	if err != nil {
		return nil, err
	}
	p, created, err := f.e.UpgradeProg(ctx, id, body.Revision, spec)
	if err != nil {
		return nil, f.err(err)
	}
	return &api.ProgReply{Prog: p, Created: created}, nil
}

func (f *fenceTarget) progRevisions(ctx context.Context, id string) ([]*store.Prog, error) {
	var ps []*store.Prog
	var err error
	if f.dm != nil {
		ps, err = f.dm.ProgRevisions(ctx, id)
	} else {
		ps, err = f.e.ProgRevisions(ctx, id)
	}
	if ps == nil {
		ps = []*store.Prog{}
	}
	return ps, f.err(err)
}

func (f *fenceTarget) progs(ctx context.Context) ([]*store.Prog, error) {
	var ps []*store.Prog
	var err error
	if f.dm != nil {
		ps, err = f.dm.Progs(ctx)
	} else {
		ps, err = f.e.Progs(ctx)
	}
	if ps == nil {
		ps = []*store.Prog{}
	}
	return ps, f.err(err)
}

func (f *fenceTarget) moveProg(ctx context.Context, id, action string) (*store.Prog, error) {
	if f.dm != nil {
		p, err := f.dm.MoveProg(ctx, id, action)
		return p, f.err(err)
	}
	var p *store.Prog
	var err error
	switch action {
	case "pause":
		p, err = f.e.PauseProg(ctx, id)
	case "resume":
		p, err = f.e.ResumeProg(ctx, id)
	default:
		p, err = f.e.RetireProg(ctx, id)
	}
	return p, f.err(err)
}

func (f *fenceTarget) invocations(ctx context.Context) ([]*store.Invocation, error) {
	var invs []*store.Invocation
	var err error
	if f.dm != nil {
		invs, err = f.dm.Invocations(ctx)
	} else {
		invs, err = f.e.Invocations(ctx)
	}
	if invs == nil {
		invs = []*store.Invocation{}
	}
	return invs, f.err(err)
}

func (f *fenceTarget) invocation(ctx context.Context, id string) (*fencing.InvocationView, error) {
	if f.dm != nil {
		v, err := f.dm.Invocation(ctx, id)
		return v, f.err(err)
	}
	v, err := f.e.Invocation(ctx, id)
	return v, f.err(err)
}

// invoke starts an invocation, top-level or a child. With wait it returns the invocation once
// it ended: the daemon drives it; without a daemon this process binds its
// own boot's worker and drives it itself.
func (f *fenceTarget) invoke(ctx context.Context, spec fencing.InvokeSpec, wait bool) (*fencing.InvocationView, error) {
	if f.dm != nil {
		inv, err := f.dm.InvokeWith(ctx, api.InvokeBody{Prog: spec.Prog, Inputs: store.U64s(spec.Inputs), Parent: spec.Parent, Steps: spec.Allowance})
		if err != nil {
			return nil, f.err(err)
		}
		if !wait {
			return &fencing.InvocationView{Invocation: inv, Operations: []fencing.OperationView{}, Children: []string{}}, nil
		}
		for {
			v, err := f.dm.WaitInvocation(ctx, inv.ID)
			if ctx.Err() != nil {
				// A signal stops the waiting; the daemon drives on.
				status := inv.Status
				if err == nil && v != nil && v.Invocation != nil {
					status = v.Status
				}
				return nil, &leavingError{
					msg: fmt.Sprintf("stopped waiting (signal); invocation %s goes on (%s), driven by the daemon: see `%s invocation show %s`, cancel it with `%s invocation cancel %s`",
						inv.ID, status, f.dm.cli, inv.ID, f.dm.cli, inv.ID),
					left: map[string]any{"invocation": inv.ID, "status": status}}
			}
			if err != nil {
				return nil, f.err(err)
			}
			if v.Status.Terminal() {
				return v, nil
			}
			if stuck := stuckOn(v); stuck != nil {
				return v, stuck
			}
		}
	}
	inv, err := f.e.InvokeWith(ctx, spec)
	if err != nil {
		return nil, f.err(err)
	}
	if wait {
		if _, err := f.e.BindBoot(ctx); err != nil {
			return nil, f.err(err)
		}
		_, err := f.e.Drive(ctx, inv.ID)
		v, verr := f.e.Invocation(context.WithoutCancel(ctx), inv.ID)
		if ctx.Err() != nil && verr == nil && !v.Status.Terminal() {
			// A signal stopped this process's drive at its next step (a
			// clean stop: nothing to reconcile); the invocation stays live
			// for a daemon to drive on.
			return nil, &leavingError{
				msg: fmt.Sprintf("stopped driving (signal); invocation %s is left %s, for a daemon on this home to drive on (`cyber-supervisor serve`): see `cyber-supervisor invocation show %s`, cancel it with `cyber-supervisor invocation cancel %s`",
					inv.ID, v.Status, inv.ID, inv.ID),
				left: map[string]any{"invocation": inv.ID, "status": v.Status}}
		}
		if err != nil {
			return v, f.err(err)
		}
		return v, f.err(verr)
	}
	// Without a daemon the program runs up to its first act (no effect):
	// the act waits for the daemon, --wait, or a manual take.
	if _, err := f.e.Advance(ctx, inv.ID); err != nil {
		if _, refused := fencing.AsRefusal(err); !refused {
			return nil, f.err(err)
		}
	}
	return f.invocation(ctx, inv.ID)
}

// stuckOn says why a live invocation does not go on by itself: an
// attempt with an unknown outcome that no dispatch in flight will
// resolve: a manual take, or any once the daemon said no drive of the
// invocation was in flight (Idle). Without Idle (the long poll's bound)
// a claimed attempt may be an act still running, and an unclaimed one
// a dispatch about to claim it.
func stuckOn(v *fencing.InvocationView) error {
	for _, op := range v.Operations {
		for _, a := range op.Attempts {
			// A manual take, or a restore's fence, is never dispatched:
			// only a reconcile moves it on.
			byHand := a.Executor == store.ExecutorManual || a.Executor == store.ExecutorRestored
			if !a.Unknown || (!byHand && !v.Idle) {
				continue
			}
			ran := "has an unknown outcome"
			switch {
			case a.Executor == store.ExecutorRestored:
				ran = "was fenced when the store was restored from a backup (its act may have run after the backup)"
			case a.Claim == nil && !byHand:
				ran = "was never claimed (its dispatch was refused, so the act did not run)"
			}
			return fencing.ProtocolError(&fencing.Error{Refusal: fencing.UnknownOutcome, Operation: op.ID, Attempt: a.N,
				Message: fmt.Sprintf("invoke: attempt %d of operation %s %s and needs reconciliation %s", a.N, op.ID, ran, fencing.ReconcileHint(op.ID, a.N))})
		}
	}
	return nil
}

func (f *fenceTarget) moveInvocation(ctx context.Context, id, action string) (any, error) {
	if f.dm != nil {
		raw, err := f.dm.MoveInvocation(ctx, id, action)
		return json.RawMessage(raw), f.err(err)
	}
	switch action {
	case "cancel":
		v, err := f.e.Cancel(ctx, id, "")
		return v, f.err(err)
	case "archive":
		if err := f.e.Archive(ctx, id); err != nil {
			return nil, f.err(err)
		}
		v, err := f.e.Invocation(ctx, id)
		return v, f.err(err)
	}
	v, err := f.e.Rebind(ctx, id)
	return v, f.err(err)
}

func (f *fenceTarget) operations(ctx context.Context, inv string) ([]fencing.OperationView, error) {
	var ops []fencing.OperationView
	var err error
	if f.dm != nil {
		ops, err = f.dm.Operations(ctx, inv)
	} else {
		ops, err = f.e.Operations(ctx, inv)
	}
	if ops == nil {
		ops = []fencing.OperationView{}
	}
	return ops, f.err(err)
}

func (f *fenceTarget) take(ctx context.Context, inv string) (*store.ActAttempt, error) {
	if f.dm != nil {
		a, err := f.dm.Take(ctx, inv)
		return a, f.err(err)
	}
	a, err := f.e.Take(ctx, inv)
	return a, f.err(err)
}

func (f *fenceTarget) reconcile(ctx context.Context, op string, body api.ReconcileBody) (*api.ReconcileReply, error) {
	if f.dm != nil {
		r, err := f.dm.Reconcile(ctx, op, body)
		return r, f.err(err)
	}
	spec, err := api.OutcomeSpecOf(body.Value, body.Failed)
	if err != nil {
		return nil, err
	}
	o, recorded, err := f.e.Reconcile(ctx, op, body.Attempt, spec)
	if err != nil {
		return nil, f.err(err)
	}
	return &api.ReconcileReply{Outcome: o, Recorded: recorded}, nil
}
