package supervisor

import (
	"context"
	"errors"
	"io"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// ErrStoreOpUnsupported: the store cannot check or copy itself while in use.
var ErrStoreOpUnsupported = errors.New("this store cannot do that while in use")

// CheckStore checks the store the daemon owns (`cyber-supervisor store
// check` through the API): bbolt's consistency check, every record's seal
// and decoding, and the store's invariants, in one read transaction.
func (s *Supervisor) CheckStore(ctx context.Context) (*store.CheckReport, error) {
	c, ok := s.store.(store.Checker)
	if !ok {
		return nil, ErrStoreOpUnsupported
	}
	rep, err := c.Check(ctx)
	if err != nil {
		s.log.Error("store check", "err", err)
	}
	return rep, err
}

// BackupStore writes a consistent copy of the store to w while the daemon
// keeps running (`cyber-supervisor store backup` through the API).
func (s *Supervisor) BackupStore(ctx context.Context, w io.Writer) (int64, error) {
	b, ok := s.store.(store.Backuper)
	if !ok {
		return 0, ErrStoreOpUnsupported
	}
	return b.Backup(ctx, w)
}
