package fencing

import (
	"slices"

	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// action is what the ward is asked about.
type action struct {
	name string
	// prog scopes the action (nil: not prog-scoped).
	prog string
	// act, when hasAct, must be granted (dispatch, prepare, take).
	act    uint64
	hasAct bool
	// requested, when needActs, must all be granted (install, invoke,
	// resume, rebind): the prog's requested acts.
	requested []uint64
	needActs  bool
}

// check is the ward: the grant permits the action only if it is enabled
// and names the root's neuron, network, policy and epoch, the act is
// granted, every requested act is granted when the action needs the act
// set, and the prog is in the grant's progs when it has them.
// Management actions (reconcile, cancel, archive, pause, retire,
// recover-reservation, bind, release) pass without any act.
func check(root *store.Root, g *store.Grant, a action) error {
	switch {
	case !g.Enabled:
		return refuse(Denied, "%s: the grant (revision %d) is disabled", a.name, g.Revision)
	case g.Neuron != root.Neuron || g.Network != root.Network:
		return refuse(Denied, "%s: the grant is for another neuron or network", a.name)
	case g.Policy != root.Policy || g.Epoch != root.Epoch:
		return refuse(Denied, "%s: the grant (revision %d) is for policy %s epoch %d, the neuron is at policy %s epoch %d",
			a.name, g.Revision, g.Policy, g.Epoch, root.Policy, root.Epoch)
	}
	if a.prog != "" && g.Progs != nil && !slices.Contains(g.Progs, a.prog) {
		return refuse(Denied, "%s: prog %s is not in the grant's progs", a.name, a.prog)
	}
	if a.hasAct && !slices.Contains(g.Acts, a.act) {
		return refuse(Denied, "%s: act %s is not granted (grant revision %d)", a.name, hostact.FormatTag(a.act), g.Revision)
	}
	if a.needActs {
		for _, t := range a.requested {
			if !slices.Contains(g.Acts, t) {
				return refuse(Denied, "%s: the prog requests act %s, which the grant (revision %d) does not give", a.name, hostact.FormatTag(t), g.Revision)
			}
		}
	}
	return nil
}

// authority reads the root and current grant and checks the action.
func authority(tx store.FencingTx, a action) (*store.Root, *store.Grant, error) {
	root, err := tx.Root()
	if err != nil {
		return nil, nil, storeError(err)
	}
	g, err := tx.Grant()
	if err != nil {
		return nil, nil, storeError(err)
	}
	if err := check(root, g, a); err != nil {
		return nil, nil, err
	}
	return root, g, nil
}

func management(name, prog string) action { return action{name: name, prog: prog} }

func withActs(name string, p *store.Prog) action {
	return action{name: name, prog: p.ID, requested: p.Acts, needActs: true}
}
