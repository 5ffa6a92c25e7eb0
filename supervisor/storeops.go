package supervisor

import (
	"context"
	"errors"
	"io"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// ErrStoreOpUnsupported: the store cannot check or copy itself while in use.
var ErrStoreOpUnsupported = errors.New("this store cannot do that while in use")

// JobsOnEtcdNote is what a check or backup of a daemon whose job store is
// on etcd says it did not cover.
const JobsOnEtcdNote = "this is the home's own store: its neuron, grants, progs and acts, and any jobs of the time the home served on it alone; " +
	"the daemon's jobs are on etcd, shared by the cluster, which etcd's own tools back up (etcdctl snapshot save, docs/cluster.md)"

// ownStore is the store `store check` and `store backup` work on: the
// home's own file, which on a shared store (etcd) is the one beside it
// (the neuron, grants, progs and acts), with note saying so.
func (s *Supervisor) ownStore() (st *bolt.Store, note string) {
	if s.home.shared {
		return s.home.bolt, JobsOnEtcdNote
	}
	return s.home.bolt, ""
}

// CheckStore checks the home's own store, which the daemon owns (`cyber-
// supervisor store check` through the API): bbolt's consistency check,
// every record's seal and decoding, and the store's invariants, in one
// read transaction. On a shared job store it is the store beside it, and
// the report's Note says so.
func (s *Supervisor) CheckStore(ctx context.Context) (*bolt.CheckReport, error) {
	st, note := s.ownStore()
	rep, err := st.Check(ctx)
	if err != nil {
		s.log.Error("store check", "err", err)
	}
	if rep != nil {
		rep.Note = note
	}
	return rep, err
}

// BackupStore writes a consistent copy of the home's own store to w while
// the daemon keeps running (`cyber-supervisor store backup` through the
// API); note is what the copy does not hold (the jobs of a shared store).
func (s *Supervisor) BackupStore(ctx context.Context, w io.Writer) (n int64, note string, err error) {
	st, note := s.ownStore()
	n, err = st.Backup(ctx, w)
	return n, note, err
}

// StoreNote is what `store check` and `store backup` through this daemon
// do not cover ("" when they cover every job).
func (s *Supervisor) StoreNote() string {
	_, note := s.ownStore()
	return note
}
