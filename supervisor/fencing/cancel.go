package fencing

import (
	"context"
	"errors"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// errTreeGrew: a child was made after the tree's locks were taken.
var errTreeGrew = errors.New("the invocation's tree grew")

// Cancel ends a live invocation as cancelled, and with it every live
// invocation of its tree below it (children, their children), in one
// transaction: all of them or none. It is refused (unknown outcome)
// while an attempt of any of them has no outcome; a retained outcome or
// an unattempted proposal is consumed without another effect, and an
// open reservation left by a crash is charged in full first. Steps
// delegated to a child stay its parent's. Management: no act needed
// (for every prog of the tree).
func (e *Engine) Cancel(ctx context.Context, invID, reason string) (*store.Invocation, error) {
	for {
		// Each member's lock keeps its drives out while it is cancelled;
		// they are taken top-down, the order every cancel takes them in.
		tree, err := e.tree(ctx, invID)
		if err != nil {
			return nil, err
		}
		unlocks := make([]func(), len(tree))
		for i, id := range tree {
			unlocks[i] = e.lockInvocation(id)
		}
		out, n, err := e.cancelTree(ctx, invID, tree, reason)
		if err == nil {
			// Their kept runs go with them, under their locks.
			for _, id := range tree {
				e.forgetInvocation(id)
			}
		}
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
		if errors.Is(err, errTreeGrew) {
			continue
		}
		if err != nil {
			return nil, err
		}
		e.log.Info("invocation cancelled", "invocation", invID, "descendants", n)
		return out, nil
	}
}

// tree lists an invocation and every invocation below it, top-down.
func (e *Engine) tree(ctx context.Context, invID string) ([]string, error) {
	var out []string
	err := e.view(ctx, func(tx store.FencingTx) error {
		var err error
		out, err = treeOf(tx, invID)
		return err
	})
	return out, err
}

func treeOf(tx store.FencingTx, invID string) ([]string, error) {
	if _, err := tx.Invocation(invID); err != nil {
		return nil, storeError(err)
	}
	out := []string{invID}
	for i := 0; i < len(out); i++ {
		kids, err := tx.Children(out[i])
		if err != nil {
			return nil, storeError(err)
		}
		out = append(out, kids...)
	}
	return out, nil
}

// cancelTree cancels the live members of invID's tree, which must be
// those of locked; it answers the invocation and how many below it it
// cancelled.
func (e *Engine) cancelTree(ctx context.Context, invID string, locked []string, reason string) (*store.Invocation, int, error) {
	var out *store.Invocation
	n := 0
	err := e.write(ctx, func(tx store.FencingTx) error {
		out, n = nil, 0
		tree, err := treeOf(tx, invID)
		if err != nil {
			return err
		}
		for _, id := range tree {
			if !slices.Contains(locked, id) {
				return errTreeGrew
			}
		}
		msg := "cancelled"
		if reason != "" && protocol.ValidText(reason) {
			msg = "cancelled: " + reason
		}
		for i, id := range tree {
			inv, err := tx.Invocation(id)
			if err != nil {
				return storeError(err)
			}
			if i == 0 {
				if _, _, err := authority(tx, management("cancel", inv.Prog)); err != nil {
					return err
				}
			}
			if inv.Status.Terminal() {
				if i == 0 {
					return refuse(Lifecycle, "cancel: invocation %s ended %s", inv.ID, inv.Status)
				}
				continue // its own children may still be live
			}
			if i > 0 {
				msg = "cancelled with invocation " + invID
			}
			if inv, err = e.cancelOne(tx, inv, msg); err != nil {
				return err
			}
			if i == 0 {
				out = inv
			} else {
				n++
			}
		}
		return nil
	})
	return out, n, err
}

// cancelOne ends one live invocation inside a transaction.
func (e *Engine) cancelOne(tx store.FencingTx, inv *store.Invocation, msg string) (*store.Invocation, error) {
	if _, _, err := authority(tx, management("cancel", inv.Prog)); err != nil {
		return nil, err
	}
	if inv.Pending != "" {
		op, err := tx.Operation(inv.Pending)
		if err != nil {
			return nil, storeError(err)
		}
		if op.Stage == store.StageAttempted {
			return nil, unknown(op.ID, op.Attempt, "cancel")
		}
		if err := tx.ConsumeOperation(op.ID); err != nil {
			return nil, storeError(err)
		}
	}
	if inv.Held != 0 {
		if err := tx.Charge(inv.ID, inv.Held); err != nil {
			return nil, storeError(err)
		}
	}
	inv, err := tx.Invocation(inv.ID)
	if err != nil {
		return nil, storeError(err)
	}
	inv.Status, inv.Error, inv.Updated = store.InvocationCancelled, protocol.Errorf(protocol.CodeCancelled, "%s", msg), e.now()
	return inv, storeError(tx.PutInvocation(inv))
}
