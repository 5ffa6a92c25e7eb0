package fencing

import (
	"context"
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// authenticateRecords gives the records of a store written before
// schema 7 their authentication tags, at the first start with the
// neuron's key: in one transaction every record that checks is tagged
// and the root is signed again saying that its records are
// authenticated (docs/fencing.md, "Authenticated records"); then the
// vault is marked. A store whose root says so already costs one read
// (and the mark, when a crash came before it was written).
//
// A root without that word in a vault that has the mark was put back:
// a writer of the file took a root of before the upgrade (signed, so
// valid) to have records without tags read again. The engine refuses to
// start on it. So does AuthenticateRecords when the root is older than
// the records beside it (a record with a tag, an attempt or a claim of
// a later placement generation), which finds the same without the mark.
func (e *Engine) authenticateRecords(ctx context.Context) error {
	var root *store.Root
	err := e.view(ctx, func(tx store.FencingTx) (err error) { root, err = tx.Root(); return err })
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // no neuron yet: InitNeuron tags what there is
	case err != nil:
		// A root that does not verify is refused wherever it is read;
		// there is nothing to authenticate on it.
		e.log.Warn("the neuron root does not read: records are not authenticated", "err", err)
		return nil
	case root.Records != "":
		e.markVault()
		return nil
	}
	marked, err := e.vault.RecordsAuthenticated()
	if err != nil {
		return err
	}
	if marked {
		return fmt.Errorf("%w: the root is of a store before schema 7, and the vault says this neuron's records are authenticated (%s); "+
			"if this is a backup of before schema 7 that you restored and trust, remove %s/%s and start again: its records are authenticated as they are",
			store.ErrRootPutBack, neuron.RecordsMark, e.vault.Dir(), neuron.RecordsMark)
	}
	flagged := *root
	flagged.Records, flagged.Updated = store.RecordsAuthenticated, e.now()
	if flagged.Signature, err = e.sign(flagged.Statement()); err != nil {
		return err
	}
	var tagged, left int
	err = e.st.Update(ctx, func(tx store.FencingTx) (err error) {
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
	e.markVault()
	return nil
}

// markVault writes the vault's mark that the store's records are
// authenticated. A mark that cannot be written is logged: the store's
// own rules still refuse a root older than its records, and the next
// start writes it.
func (e *Engine) markVault() {
	if err := e.vault.MarkRecordsAuthenticated(); err != nil {
		e.log.Warn("the vault is not marked: a root put back from before schema 7 is refused only by the store's rules", "err", err)
	}
}
