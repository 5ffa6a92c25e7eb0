package fencing

import (
	"context"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Prog revisions. An upgrade replaces a prog's program, requested acts
// and bounds by its next revision; the prog keeps its id, lifecycle
// state and live invocations. An invocation stays pinned to the
// revision it was started at: it is stale once a newer revision
// replaced it. A stale invocation dispatches nothing more (a claim
// checks the revision, under the ward guard), proposes no new act, and
// ends `conflict` (stale_state) at its next slice: with its result kept
// when its program, replayed at its own revision, reaches the end
// without another act. An attempt it has already made stays as it is
// and is reconciled as any other.

// UpgradeProg makes spec the next revision of prog id, whose current
// revision must be revision (the CAS). Zero bounds keep the current
// ones, and so do nil acts (an empty request asks for none). It needs a current grant that gives every act the new revision
// requests; a retiring or retired prog is not upgraded. The same spec
// sent again once it is the current revision answers it (created false).
func (e *Engine) UpgradeProg(ctx context.Context, id string, revision uint64, spec ProgSpec) (*store.Prog, bool, error) {
	if spec.Program.IsAtom() {
		return nil, false, protocol.Errorf(protocol.CodeInvalidJob, "a program is a formula (a pair), not an atom")
	}
	if _, err := noun.Measure(spec.Program, MaxProgramNodes, store.MaxNounDepth); err != nil {
		return nil, false, protocol.Errorf(protocol.CodeInvalidJob, "the program exceeds %d nodes", MaxProgramNodes)
	}
	keepActs := spec.Acts == nil
	acts, err := e.requestedActs(spec.Acts)
	if err != nil {
		return nil, false, err
	}
	if _, err := e.signer(); err != nil {
		return nil, false, err
	}
	if spec.Name != "" && !protocol.ValidText(spec.Name) {
		spec.Name = ""
	}
	program := noun.AppendTokens(nil, spec.Program)
	particle := neuron.Particle(spec.Program.Particle())
	// The upgrade changes what a dispatch checks (the act request, the
	// revision): it is ordered entirely before or after each one.
	e.guard.Lock()
	defer e.guard.Unlock()
	var out *store.Prog
	created := false
	err = e.write(ctx, func(tx store.FencingTx) error {
		out, created = nil, false
		p, err := tx.Prog(id)
		if err != nil {
			return storeError(err)
		}
		np := *p
		np.Revision, np.Program, np.Particle, np.Acts, np.Updated = p.Revision+1, program, particle, store.U64s(acts), e.now()
		if keepActs {
			np.Acts = p.Acts
		}
		if spec.Name != "" {
			np.Name = spec.Name
		}
		if spec.StepLimit != 0 {
			np.StepLimit = spec.StepLimit
		}
		if spec.MaxInFlight != 0 {
			np.MaxInFlight = spec.MaxInFlight
		}
		if p.Revision == revision+1 && p.Particle == particle && slices.Equal(p.Acts, np.Acts) &&
			(spec.StepLimit == 0 || spec.StepLimit == p.StepLimit) && (spec.MaxInFlight == 0 || spec.MaxInFlight == p.MaxInFlight) {
			out = p
			return nil
		}
		if p.Revision != revision {
			return refuse(Conflict, "upgrade: prog %s is at revision %d, not %d", p.ID, p.Revision, revision)
		}
		if p.State == store.ProgRetiring || p.State == store.ProgRetired {
			return refuse(Lifecycle, "upgrade: prog %s is %s", p.ID, p.State)
		}
		if _, _, err := authority(tx, withActs("upgrade", &np)); err != nil {
			return err
		}
		if err := tx.UpgradeProg(&np); err != nil {
			return storeError(err)
		}
		out, created = &np, true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if created {
		e.log.Info("prog upgraded", "prog", out.ID, "revision", out.Revision, "acts", len(out.Acts), "step_limit", out.StepLimit)
	}
	return out, created, nil
}

// requestedActs is a sorted, unique act request of registered acts.
func (e *Engine) requestedActs(req []uint64) ([]uint64, error) {
	acts := slices.Clone(req)
	slices.Sort(acts)
	acts = slices.Compact(acts)
	if len(acts) > protocol.MaxActs {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "%d acts, at most %d", len(acts), protocol.MaxActs)
	}
	for _, t := range acts {
		if _, ok := e.acts.Lookup(t); !ok {
			return nil, refuse(Unsupported, "no act is registered under tag %s", hostact.FormatTag(t))
		}
	}
	if acts == nil {
		acts = []uint64{}
	}
	return acts, nil
}

// ProgRevisions lists every revision of a prog, the first one first.
func (e *Engine) ProgRevisions(ctx context.Context, id string) ([]*store.Prog, error) {
	var out []*store.Prog
	err := e.view(ctx, func(tx store.FencingTx) error {
		out = nil
		p, err := tx.Prog(id)
		if err != nil {
			return storeError(err)
		}
		for r := uint64(0); r < p.Revision; r++ {
			rp, err := tx.ProgRevision(id, r)
			if err != nil {
				return storeError(err)
			}
			out = append(out, rp)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// stale says why an invocation of a replaced revision may not act.
func stale(name string, inv *store.Invocation, p *store.Prog) error {
	return refuse(Conflict, "%s: invocation %s runs revision %d of prog %s, which is at revision %d", name, inv.ID, inv.ProgRevision, p.ID, p.Revision)
}

// endIfStale ends a stale invocation whose proposal nobody attempted:
// the proposal is dropped without an effect and the invocation is a
// conflict. It reports whether it ended it.
func (e *Engine) endIfStale(ctx context.Context, invID string) (bool, error) {
	// Read first: a drive asks at every proposal, and a write that
	// changes nothing would still cost a commit.
	current := true
	err := e.view(ctx, func(tx store.FencingTx) error {
		inv, p, err := invocationAndProg(tx, invID)
		if err == nil {
			current = inv.ProgRevision == p.Revision
		}
		return err
	})
	if err != nil || current {
		return false, err
	}
	ended := false
	err = e.write(ctx, func(tx store.FencingTx) error {
		ended = false
		inv, p, err := invocationAndProg(tx, invID)
		if err != nil {
			return err
		}
		if inv.Status.Terminal() || inv.ProgRevision == p.Revision || inv.Pending == "" {
			return nil
		}
		op, err := tx.Operation(inv.Pending)
		if err != nil {
			return storeError(err)
		}
		if op.Stage != store.StageProposed {
			return nil
		}
		if _, _, err := authority(tx, management("run", p.ID)); err != nil {
			return err
		}
		ended = true
		return e.conflicted(tx, inv, func(inv *store.Invocation) {
			inv.Error = protocol.Errorf(protocol.CodeStaleState, "%s", stale("run", inv, p).(*Error).Message)
		})
	})
	return ended, err
}

// invocationAndProg reads an invocation and its prog as it is now (the
// current revision).
func invocationAndProg(tx store.FencingTx, invID string) (*store.Invocation, *store.Prog, error) {
	inv, err := tx.Invocation(invID)
	if err != nil {
		return nil, nil, storeError(err)
	}
	p, err := tx.Prog(inv.Prog)
	if err != nil {
		return nil, nil, storeError(err)
	}
	return inv, p, nil
}
