package neuron

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cyberia-to/cyber-supervisor/internal/fsync"
)

// RecordsMark is the vault's mark that this neuron's store authenticates
// every record it keeps (docs/fencing.md, "Authenticated records"). A
// store written before schema 7 has records without tags and a root
// that says so; the first start with the key tags them and then writes
// this mark. The mark is in the vault because nothing in the store file
// can say it: a writer of the file can put back a root of before the
// upgrade (signed, so valid) with every record stripped of its tag, and
// that store would read as one never upgraded. With the mark such a
// store is refused.
const RecordsMark = "records-authenticated"

// recordsMarkText is what the mark holds: it says what it is to whoever
// looks into the vault.
const recordsMarkText = "every record of this neuron's store is authenticated; a store without tags is refused (docs/fencing.md)\n"

func (v *Vault) markPath() string { return filepath.Join(v.dir, RecordsMark) }

// RecordsAuthenticated reports whether the vault holds the mark. Any
// entry of its name counts: a mark that is not a regular file is not
// one this process wrote, but taking it for none would only weaken the
// refusal it stands for.
func (v *Vault) RecordsAuthenticated() (bool, error) {
	_, err := os.Lstat(v.markPath())
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("vault %s: %w", v.markPath(), err)
	}
	return true, nil
}

// MarkRecordsAuthenticated writes the mark, durably, once (an existing
// mark is kept; O_EXCL follows no symlink).
func (v *Vault) MarkRecordsAuthenticated() error {
	if err := v.checkDir(); err != nil {
		return err
	}
	f, err := os.OpenFile(v.markPath(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark vault %s: %w", v.markPath(), err)
	}
	_, werr := f.WriteString(recordsMarkText)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("mark vault %s: %w", v.markPath(), werr)
	}
	return fsync.Dir(v.dir)
}
