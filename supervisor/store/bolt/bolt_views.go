package bolt

import (
	"context"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The bbolt file holds both domains: Store itself is the job store,
// Fencing its fencing records, Local both in one transaction. The views
// share the file, its group commit and its trust; closing is the Store's.

// Fencing is the store's fencing records (store.Fencing).
func (s *Store) Fencing() store.Fencing { return boltFencing{s} }

// Local is the store's job and fencing records together (store.Local).
func (s *Store) Local() store.Local { return boltLocal{s} }

type boltFencing struct{ s *Store }

func (f boltFencing) Update(ctx context.Context, fn func(store.FencingTx) error) error {
	return f.s.updateTx(ctx, func(t *boltTx) error { return fn(t) })
}

func (f boltFencing) Batch(ctx context.Context, fn func(store.FencingTx) error) error {
	return f.s.batchTx(ctx, func(t *boltTx) error { return fn(t) })
}

func (f boltFencing) View(ctx context.Context, fn func(store.FencingTx) error) error {
	return f.s.viewTx(ctx, func(t *boltTx) error { return fn(t) })
}

type boltLocal struct{ s *Store }

func (l boltLocal) Update(ctx context.Context, fn func(store.LocalTx) error) error {
	return l.s.updateTx(ctx, func(t *boltTx) error { return fn(t) })
}

func (l boltLocal) Batch(ctx context.Context, fn func(store.LocalTx) error) error {
	return l.s.batchTx(ctx, func(t *boltTx) error { return fn(t) })
}

func (l boltLocal) View(ctx context.Context, fn func(store.LocalTx) error) error {
	return l.s.viewTx(ctx, func(t *boltTx) error { return fn(t) })
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Fencing = boltFencing{}
	_ store.Local   = boltLocal{}
)
