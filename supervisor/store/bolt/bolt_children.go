package bolt

import (
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Invocation children (schema 6): a child runs on an allowance its
// parent delegates when the child is created. The allowance is the
// child's limit and counts in the parent's Delegated from then on: the
// steps of a tree never exceed its top-level invocation's limit, and
// nothing delegated comes back. The index children/parent ‖ 0 ‖ child
// lists them.

func childKey(parent, child string) []byte {
	k := make([]byte, 0, len(parent)+1+len(child))
	return append(append(append(k, parent...), 0), child...)
}

// delegate checks that child may take its allowance from its parent and
// returns the parent with the allowance delegated (the caller writes
// it): the parent is live, of the same neuron and network and at the
// child's epoch, and has the steps free (neither charged, delegated nor
// held by an open reservation).
func (t *boltTx) delegate(child *store.Invocation) (*store.Invocation, error) {
	parent, err := t.Invocation(child.Parent)
	if err != nil {
		return nil, fmt.Errorf("create invocation: parent: %w", err)
	}
	free := parent.Limit - parent.Charged - parent.Delegated - parent.Held
	switch {
	case parent.Status.Terminal():
		return nil, fmt.Errorf("create invocation: %w: parent %s ended %s", store.ErrInvariant, parent.ID, parent.Status)
	case parent.Neuron != child.Neuron || parent.Network != child.Network:
		return nil, fmt.Errorf("create invocation: %w: the parent is another neuron's or network's", store.ErrConflict)
	case parent.Epoch != child.Epoch:
		return nil, fmt.Errorf("create invocation: %w: parent %s is at epoch %d", store.ErrInvariant, parent.ID, parent.Epoch)
	case child.Limit > free:
		return nil, fmt.Errorf("create invocation: %w: an allowance of %d steps, parent %s has %d free", store.ErrInvariant, child.Limit, parent.ID, free)
	}
	parent.Delegated += child.Limit
	parent.Updated = child.Created
	return parent, nil
}

// Children lists the ids of an invocation's children, in id order.
func (t *boltTx) Children(parent string) ([]string, error) {
	var out []string
	err := t.bucket(bucketChildren).each(append([]byte(parent), 0), func(k, _ []byte) (bool, error) {
		out = append(out, string(k[len(parent)+1:]))
		return true, nil
	})
	return out, err
}

// tree is inv and all its descendants (live records), parents first.
func (t *boltTx) tree(inv *store.Invocation) ([]*store.Invocation, error) {
	out := []*store.Invocation{inv}
	for i := 0; i < len(out); i++ {
		kids, err := t.Children(out[i].ID)
		if err != nil {
			return nil, err
		}
		for _, id := range kids {
			c, err := t.Invocation(id)
			if err != nil {
				return nil, fmt.Errorf("child %s of %s: %w", id, out[i].ID, err)
			}
			out = append(out, c)
		}
	}
	return out, nil
}
