package fencing

import (
	"context"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// InvocationDigest is what an operator's page shows of the invocations
// and operations: the invocations counted by status, the newest few, and
// the operations with an attempt whose outcome is unknown (each awaits a
// reconcile). It is read in one pass over each, holding at most the
// newest few invocations and maxUnknown operations whatever the store
// holds, so a page that reads it costs the daemon bounded memory.
type InvocationDigest struct {
	ByStatus    map[store.InvocationStatus]int
	Invocations int
	// Newest are the newest invocations (by Seq), newest first.
	Newest     []*store.Invocation
	Operations int
	// Unknown are operations with an unknown attempt, at most maxUnknown;
	// UnknownMore counts those left out.
	Unknown     []OperationView
	UnknownMore int
}

// InvocationDigest reads the digest: at most newest invocations and
// maxUnknown operations kept.
func (e *Engine) InvocationDigest(ctx context.Context, newest, maxUnknown int) (*InvocationDigest, error) {
	var d InvocationDigest
	byNewest := func(a, b *store.Invocation) int {
		switch {
		case a.Seq > b.Seq:
			return -1
		case a.Seq < b.Seq:
			return 1
		}
		return 0
	}
	err := e.view(ctx, func(tx store.FencingTx) error {
		d = InvocationDigest{ByStatus: map[store.InvocationStatus]int{}}
		err := tx.ForEachInvocation(func(inv *store.Invocation) bool {
			d.Invocations++
			d.ByStatus[inv.Status]++
			d.Newest = append(d.Newest, inv)
			// Trimmed when twice the size kept: sorting a slice of at
			// most 2·newest, once every newest invocations.
			if len(d.Newest) >= 2*max(newest, 1) {
				slices.SortFunc(d.Newest, byNewest)
				d.Newest = slices.Delete(d.Newest, newest, len(d.Newest))
			}
			return true
		})
		if err != nil {
			return storeError(err)
		}
		var viewErr error
		err = tx.ForEachOperation(func(op *store.Operation) bool {
			d.Operations++
			v, err := operationView(tx, op)
			if err != nil {
				viewErr = err
				return false
			}
			if !slices.ContainsFunc(v.Attempts, func(a AttemptView) bool { return a.Unknown }) {
				return true
			}
			if len(d.Unknown) < maxUnknown {
				d.Unknown = append(d.Unknown, v)
			} else {
				d.UnknownMore++
			}
			return true
		})
		if viewErr != nil {
			return viewErr
		}
		return storeError(err)
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(d.Newest, byNewest)
	d.Newest = d.Newest[:min(newest, len(d.Newest))]
	return &d, nil
}
