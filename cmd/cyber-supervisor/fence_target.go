package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fenceservice"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// fenceTarget is where a neuron, grant, placement, prog, invoke,
// invocation or operation command acts: one fencing interface (the
// fencing service's method set), over the daemon's API when a daemon
// owns the home, the service itself in-process on the home otherwise
// (its store, its vault, the built-in acts, a boot of this process's
// own). Both give the same answers (the service's types).
type fenceTarget struct {
	fenceservice.Fencer
	// mapErr makes an error the command's: the daemon's socket gone is
	// no_daemon, an engine refusal its contract code.
	mapErr func(error) error
	// leave is the error of an invoke --wait a signal stopped while the
	// invocation was live (status).
	leave func(id string, status store.InvocationStatus) error
	close func()
}

// fence opens the command's target; close it with done. Only a command
// that makesHome (neuron init) makes a home that has no store yet: every
// other one needs a record that only a store holds, so on a home with no
// store (a mistyped --home) it is ErrNoStore (no_store) and nothing is
// made, as gc and store check answer.
func (a *app) fence(makesHome bool) (*fenceTarget, error) {
	if dm, err := a.dialDaemon(); err == nil {
		return &fenceTarget{Fencer: dm.Client, mapErr: dm.err, close: func() {},
			leave: func(id string, status store.InvocationStatus) error {
				return &leavingError{
					msg: fmt.Sprintf("stopped waiting (signal); invocation %s goes on (%s), driven by the daemon: see `%s invocation show %s`, cancel it with `%s invocation cancel %s`",
						id, status, dm.cli, id, dm.cli, id),
					left: map[string]any{"invocation": id, "status": status}}
			}}, nil
	}
	return a.fenceOffline(makesHome)
}

// fenceOffline is the fencing service in-process on a home no daemon
// owns.
func (a *app) fenceOffline(makesHome bool) (*fenceTarget, error) {
	home, err := supervisor.ResolveHome(a.home)
	if err != nil {
		return nil, err
	}
	if !makesHome {
		if err := bolt.Exists(supervisor.StorePath(home)); err != nil {
			return nil, err
		}
	}
	st, err := bolt.Open(supervisor.StoreDir(home), 200*time.Millisecond)
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
	e, err := fencing.New(fencing.Config{Store: st.Fencing(), Trust: st.Trust(), Vault: neuron.OpenVault(neuron.VaultDir(home)), Acts: acts,
		Boot: "cli-" + hex.EncodeToString(b[:]), Version: versionString(), DeviceID: machineID(), Logger: a.logger("warn")})
	if err != nil {
		em.Close()
		st.Close()
		return nil, err
	}
	f := &fenceTarget{Fencer: fenceservice.New(e, fenceservice.Offline(e)), mapErr: refusalErr, leave: leftForDaemon,
		close: func() {
			e.Close()
			em.Close()
			st.Close()
		}}
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

func (f *fenceTarget) done() { f.close() }

// err makes a command's error its answer (mapErr); nil stays nil.
func (f *fenceTarget) err(err error) error {
	if err == nil {
		return nil
	}
	return f.mapErr(err)
}

// refusalErr: the engine's refusals carry their contract code
// (docs/fencing.md, "Refusals").
func refusalErr(err error) error {
	if _, ok := fencing.AsRefusal(err); ok {
		return fencing.ProtocolError(err)
	}
	return err
}

// leftForDaemon: a signal stopped this process's drive at its next step
// (a clean stop: nothing to reconcile); the invocation stays live for a
// daemon to drive on.
func leftForDaemon(id string, status store.InvocationStatus) error {
	return &leavingError{
		msg: fmt.Sprintf("stopped driving (signal); invocation %s is left %s, for a daemon on this home to drive on (`cyber-supervisor serve`): see `cyber-supervisor invocation show %s`, cancel it with `cyber-supervisor invocation cancel %s`",
			id, status, id, id),
		left: map[string]any{"invocation": id, "status": status}}
}

// splitActs splits a --acts list; the service resolves the names.
func splitActs(list string) []string {
	out := []string{}
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// invoke starts an invocation, top-level or a child. With wait it
// returns the invocation once it ended: the daemon drives it, or without
// a daemon this process binds its own boot's worker and drives it itself
// (the service's WaitInvocation either way).
func (f *fenceTarget) invoke(ctx context.Context, body api.InvokeBody, wait bool) (*api.InvocationReply, error) {
	inv, err := f.InvokeWith(ctx, body)
	if err != nil {
		return nil, err
	}
	if !wait {
		return &api.InvocationReply{Invocation: *inv, Operations: []api.OperationReply{}, Children: []string{}}, nil
	}
	for {
		v, err := f.WaitInvocation(ctx, inv.ID)
		// An answer without the invocation's id is no invocation (a
		// reply cut short); its status says nothing.
		answered := err == nil && v != nil && v.ID != ""
		ended := answered && store.InvocationStatus(v.Status).Terminal()
		if ctx.Err() != nil && !ended {
			// A signal stops the waiting; the invocation stays live.
			status := inv.Status
			if answered {
				status = v.Status
			}
			return nil, f.leave(inv.ID, store.InvocationStatus(status))
		}
		if err != nil {
			return nil, err
		}
		if ended {
			return v, nil
		}
		if stuck := stuckOn(v); stuck != nil {
			return v, stuck
		}
	}
}

// stuckOn says why a live invocation does not go on by itself: an
// attempt with an unknown outcome that no dispatch in flight will
// resolve: a manual take, or any once the daemon said no drive of the
// invocation was in flight (Idle). Without Idle (the long poll's bound)
// a claimed attempt may be an act still running, and an unclaimed one
// a dispatch about to claim it.
func stuckOn(v *api.InvocationReply) error {
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
