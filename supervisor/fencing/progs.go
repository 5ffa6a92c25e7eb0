package fencing

import (
	"context"
	"errors"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Defaults of a prog.
const (
	DefaultStepLimit   = 1 << 20
	DefaultMaxInFlight = 64
	// MaxProgramNodes bounds an installed program's formula.
	MaxProgramNodes = 1 << 16
)

// ProgSpec is what InstallProg installs.
type ProgSpec struct {
	Program noun.Noun
	// Name is where the program came from (a file name): informational.
	Name        string
	Acts        []uint64 // requested acts
	StepLimit   uint64   // 0: DefaultStepLimit
	MaxInFlight uint64   // 0: DefaultMaxInFlight
}

// InstallProg installs a program in the host-act environment and makes
// it active. It needs a current grant that gives every requested act
// (and the prog, when the grant names progs); every requested act must
// be registered here. Installing the same program with the same settings
// again answers the existing prog (created=false); other settings under
// the same program are a conflict.
func (e *Engine) InstallProg(ctx context.Context, spec ProgSpec) (*store.Prog, bool, error) {
	if spec.StepLimit == 0 {
		spec.StepLimit = DefaultStepLimit
	}
	if spec.MaxInFlight == 0 {
		spec.MaxInFlight = DefaultMaxInFlight
	}
	if spec.Program.IsAtom() {
		return nil, false, protocol.Errorf(protocol.CodeInvalidJob, "a program is a formula (a pair), not an atom")
	}
	if _, err := noun.Measure(spec.Program, MaxProgramNodes, store.MaxNounDepth); err != nil {
		return nil, false, protocol.Errorf(protocol.CodeInvalidJob, "the program exceeds %d nodes", MaxProgramNodes)
	}
	if spec.Name != "" && !protocol.ValidText(spec.Name) {
		spec.Name = ""
	}
	acts, err := e.requestedActs(spec.Acts)
	if err != nil {
		return nil, false, err
	}
	k, err := e.signer()
	if err != nil {
		return nil, false, err
	}
	particle := neuron.Particle(spec.Program.Particle())
	now := e.now()
	p := &store.Prog{ID: store.ProgID(k.ID(), particle), Neuron: k.ID(), Environment: protocol.EnvHostAct,
		Program: noun.AppendTokens(nil, spec.Program), Particle: particle, Name: spec.Name, State: store.ProgInstalled,
		StepLimit: spec.StepLimit, MaxInFlight: spec.MaxInFlight, Acts: store.U64s(acts), Created: now, Updated: now}
	created := false
	var out *store.Prog
	err = e.write(ctx, func(tx store.FencingTx) error {
		created, out = false, nil
		if _, _, err := authority(tx, withActs("install", p)); err != nil {
			return err
		}
		old, err := tx.Prog(p.ID)
		switch {
		case err == nil:
			if old.Revision != 0 {
				return refuse(Conflict, "prog %s was installed from this program and is at revision %d now", p.ID, old.Revision)
			}
			if old.StepLimit != p.StepLimit || old.MaxInFlight != p.MaxInFlight || !slices.Equal(old.Acts, p.Acts) {
				return refuse(Conflict, "prog %s is installed with other settings", p.ID)
			}
			out = old
			return nil
		case !errors.Is(err, store.ErrNotFound):
			return storeError(err)
		}
		cp := *p
		if err := tx.CreateProg(&cp); err != nil {
			return storeError(err)
		}
		cp.State = store.ProgActive
		if err := tx.PutProg(&cp); err != nil {
			return storeError(err)
		}
		created, out = true, &cp
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if created {
		e.log.Info("prog installed", "prog", out.ID, "acts", len(out.Acts), "step_limit", out.StepLimit)
	}
	return out, created, nil
}

// Prog reads a prog.
func (e *Engine) Prog(ctx context.Context, id string) (*store.Prog, error) {
	var p *store.Prog
	err := e.view(ctx, func(tx store.FencingTx) (err error) { p, err = tx.Prog(id); return err })
	return p, storeError(err)
}

// Progs lists the installed progs.
func (e *Engine) Progs(ctx context.Context) ([]*store.Prog, error) {
	var out []*store.Prog
	err := e.view(ctx, func(tx store.FencingTx) error {
		out = nil
		return tx.ForEachProg(func(p *store.Prog) bool { out = append(out, p); return true })
	})
	return out, storeError(err)
}

// PauseProg stops scheduling and dispatching a prog's invocations
// (outcomes are still accepted). Management: no act needed.
func (e *Engine) PauseProg(ctx context.Context, id string) (*store.Prog, error) {
	return e.moveProg(ctx, id, "pause", store.ProgPaused)
}

// ResumeProg makes a paused (or installed) prog active again; it needs
// the prog's act set.
func (e *Engine) ResumeProg(ctx context.Context, id string) (*store.Prog, error) {
	return e.moveProg(ctx, id, "resume", store.ProgActive)
}

// RetireProg retires a prog with no live invocation (busy otherwise).
func (e *Engine) RetireProg(ctx context.Context, id string) (*store.Prog, error) {
	return e.moveProg(ctx, id, "retire", store.ProgRetired)
}

func (e *Engine) moveProg(ctx context.Context, id, name string, to store.ProgState) (*store.Prog, error) {
	var out *store.Prog
	err := e.write(ctx, func(tx store.FencingTx) error {
		out = nil
		p, err := tx.Prog(id)
		if err != nil {
			return storeError(err)
		}
		a := management(name, p.ID)
		if to == store.ProgActive {
			a = withActs(name, p)
		}
		if _, _, err := authority(tx, a); err != nil {
			return err
		}
		if p.State == to {
			out = p
			return nil
		}
		steps := []store.ProgState{to}
		if to == store.ProgRetired {
			if p.State != store.ProgRetiring {
				steps = []store.ProgState{store.ProgRetiring, store.ProgRetired}
			}
			live, err := tx.LiveInvocations(p.ID)
			if err != nil {
				return storeError(err)
			}
			if live > 0 {
				return refuse(Busy, "prog %s has %d live invocations", p.ID, live)
			}
		}
		for _, s := range steps {
			if !p.State.CanMove(s) {
				return refuse(Lifecycle, "prog %s is %s and cannot become %s", p.ID, p.State, s)
			}
			p.State, p.Updated = s, e.now()
			if err := tx.PutProg(p); err != nil {
				return storeError(err)
			}
		}
		out = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.log.Info("prog moved", "prog", id, "state", out.State)
	return out, nil
}

// Invoke starts an invocation of an active prog on public inputs (each
// a canonical field value). It needs the prog's act set; it is busy
// when the prog has max in flight live invocations.
func (e *Engine) Invoke(ctx context.Context, prog string, inputs []uint64) (*store.Invocation, error) {
	return e.InvokeWith(ctx, InvokeSpec{Prog: prog, Inputs: inputs})
}

// InvokeSpec is what InvokeWith starts.
type InvokeSpec struct {
	Prog   string
	Inputs []uint64
	// Parent, if set, makes the invocation a child of that live
	// invocation, running on Allowance steps its parent delegates (0: as
	// many as the parent has free, at most the prog's step limit). The
	// delegated steps are the parent's from then on, used or not.
	Parent    string
	Allowance uint64
}

// InvokeWith starts an invocation, top-level or a child. A child also
// needs the grant to cover its parent's prog; its parent's free steps
// are those neither charged, delegated nor held by a running slice
// (busy while one holds them).
func (e *Engine) InvokeWith(ctx context.Context, spec InvokeSpec) (*store.Invocation, error) {
	for i, v := range spec.Inputs {
		if v >= field.P {
			return nil, protocol.Errorf(protocol.CodeInvalidJob, "input %d is not a canonical field value", i+1)
		}
	}
	if spec.Parent == "" && spec.Allowance != 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "an allowance is delegated by a parent: name one")
	}
	prog := spec.Prog
	var out *store.Invocation
	err := e.write(ctx, func(tx store.FencingTx) error {
		out = nil
		p, err := tx.Prog(prog)
		if err != nil {
			return storeError(err)
		}
		root, _, err := authority(tx, withActs("invoke", p))
		if err != nil {
			return err
		}
		if p.State != store.ProgActive {
			return refuse(Lifecycle, "prog %s is %s", p.ID, p.State)
		}
		live, err := tx.LiveInvocations(p.ID)
		if err != nil {
			return storeError(err)
		}
		if uint64(live) >= p.MaxInFlight {
			return refuse(Busy, "prog %s has %d live invocations, its max in flight", p.ID, live)
		}
		now := e.now()
		inv := &store.Invocation{Neuron: root.Neuron, Network: root.Network, Prog: p.ID, ProgRevision: p.Revision,
			Inputs: store.U64s(slices.Clone(spec.Inputs)), Epoch: root.Epoch, Status: store.InvocationRunning,
			Limit: p.StepLimit, Created: now, Updated: now}
		if inv.Inputs == nil {
			inv.Inputs = store.U64s{}
		}
		if spec.Parent != "" {
			if inv.Limit, err = allowance(tx, spec, p, root); err != nil {
				return err
			}
			inv.Parent = spec.Parent
		}
		if err := tx.CreateInvocation(inv); err != nil {
			return storeError(err)
		}
		out = inv
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.log.Debug("invoked", "prog", prog, "invocation", out.ID, "parent", out.Parent)
	return out, nil
}

// allowance checks a child's parent and returns the steps it delegates.
func allowance(tx store.FencingTx, spec InvokeSpec, p *store.Prog, root *store.Root) (uint64, error) {
	parent, err := tx.Invocation(spec.Parent)
	if err != nil {
		return 0, storeError(err)
	}
	if _, _, err := authority(tx, management("delegate", parent.Prog)); err != nil {
		return 0, err
	}
	switch {
	case parent.Status.Terminal():
		return 0, refuse(Lifecycle, "invoke: parent %s ended %s", parent.ID, parent.Status)
	case parent.Epoch != root.Epoch:
		return 0, refuse(Denied, "invoke: parent %s is at epoch %d, the neuron at %d (rebind it)", parent.ID, parent.Epoch, root.Epoch)
	}
	left := free(parent)
	want := spec.Allowance
	if want == 0 {
		want = min(left, p.StepLimit)
	}
	switch {
	case want > p.StepLimit:
		return 0, protocol.Errorf(protocol.CodeInvalidJob, "an allowance of %d steps is over prog %s's step limit %d", want, p.ID, p.StepLimit)
	case want <= left && want > 0:
		return want, nil
	case parent.Held != 0:
		return 0, refuse(Busy, "invoke: a slice of parent %s holds its steps (%d free); try again when it waits", parent.ID, left)
	}
	return 0, refuse(Budget, "invoke: parent %s has %d steps free, the child asks for %d", parent.ID, left, want)
}
