package supervisor

import (
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// homeStore is the home's own store, its bbolt file, in the views the
// supervisor uses: local for the transactions that read or write job and
// fencing records together (recovery, restore fencing, the placement of
// a local job attempt), fencing for the dispatch engine. Both go through
// the file's write guard. On a cluster (shared) the job store is another
// and this file holds the neuron and the host acts only.
type homeStore struct {
	bolt    *bolt.Store
	guard   *ioGuard
	local   store.Local
	fencing store.Fencing
	shared  bool
}

func newHomeStore(b *bolt.Store, shared bool, g *ioGuard) *homeStore {
	return &homeStore{bolt: b, guard: g, shared: shared,
		local:   guardedLocal{Local: b.Local(), ioGuard: g},
		fencing: fenceStore{Fencing: b.Fencing(), ioGuard: g}}
}
