package fencing

import (
	"context"
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// authenticateRecords gives the records of a store written before
// schema 7 their authentication tags, at the first start with the
// neuron's key: in one transaction every record that checks is tagged
// and the root is signed again saying that its records are
// authenticated (docs/fencing.md, "Authenticated records"). A store
// whose root says so already costs one read. A store whose root is
// older than its records (put back by a writer, to have records without
// tags taken again) is refused: nothing acts on it.
func (e *Engine) authenticateRecords(ctx context.Context) error {
	var root *store.Root
	err := e.view(ctx, func(tx store.Tx) (err error) { root, err = tx.Root(); return err })
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // no neuron yet: InitNeuron tags what there is
	case err != nil:
		// A root that does not verify is refused wherever it is read;
		// there is nothing to authenticate on it.
		e.log.Warn("the neuron root does not read: records are not authenticated", "err", err)
		return nil
	case root.Records != "":
		return nil
	}
	flagged := *root
	flagged.Records, flagged.Updated = store.RecordsAuthenticated, e.now()
	if flagged.Signature, err = e.sign(flagged.Statement()); err != nil {
		return err
	}
	var tagged, left int
	err = e.st.Update(ctx, func(tx store.Tx) (err error) {
		tagged, left, err = tx.AuthenticateRecords(&flagged)
		return err
	})
	if err != nil {
		return fmt.Errorf("authenticate the store's records: %w", err)
	}
	e.log.Info("the store's records of schema 6 are authenticated now", "records", tagged)
	if left > 0 {
		e.log.Warn("records that do not check were left without a tag: they are refused (store check names them)", "records", left)
	}
	return nil
}
