package etcd

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/storetest"
)

// A key taken for absent without a read (the accepted index, where the
// job read from this handle's last commit names no accepted attempt) is
// compared at commit: an acceptance another handle committed meanwhile
// makes the first run conflict, and the run after it reads the index and
// refuses.
func TestAssumedAbsentKeysAreCompared(t *testing.T) {
	a, b, _ := pair(t)
	j := storetest.NewJob("assume")
	j.Attempts = 2
	mustUpdate(t, a, func(tx store.Tx) error {
		if err := storetest.Create(tx, j); err != nil {
			return err
		}
		for n := uint32(1); n <= 2; n++ {
			at := &store.Attempt{Job: j.ID, N: n, Boot: "b", State: lifecycle.Queued, Verified: []byte(`{}`)}
			for _, st := range []lifecycle.State{lifecycle.Queued, lifecycle.Running, lifecycle.Produced, lifecycle.Verified} {
				at.State = st
				if err := tx.PutAttempt(at); err != nil {
					return err
				}
			}
		}
		return nil
	})
	// b accepts attempt 1 behind a's back, the index only: a's last commit
	// still says the job has no accepted attempt.
	mustUpdate(t, b, func(tx store.Tx) error {
		at, err := tx.Attempt(j.ID, 1)
		if err != nil {
			return err
		}
		at.State = lifecycle.Accepted
		return tx.PutAttempt(at)
	})
	runs, assumed := 0, false
	err := a.Update(context.Background(), func(st store.Tx) error {
		runs++
		tx := st.(*tx)
		at, err := tx.Attempt(j.ID, 2)
		if err != nil {
			return err
		}
		at.State = lifecycle.Accepted
		err = tx.PutAttempt(at)
		if e, ok := tx.cache[tx.s.k.accepted(j.ID)]; runs == 1 && ok && !e.present && e.mod == 0 && tx.usedRecent {
			assumed = true
		}
		return err
	})
	if !errors.Is(err, store.ErrInvariant) || runs < 2 || !assumed {
		t.Fatalf("second acceptance: %v after %d runs (first run assumed the index absent: %v)", err, runs, assumed)
	}
	var acc []uint32
	if err := b.View(context.Background(), func(tx store.Tx) error {
		atts, err := tx.Attempts(j.ID)
		for _, at := range atts {
			if at.State == lifecycle.Accepted {
				acc = append(acc, at.N)
			}
		}
		return err
	}); err != nil || len(acc) != 1 || acc[0] != 1 {
		t.Fatalf("accepted attempts %v %v, want [1]", acc, err)
	}
}

// Claims, the accepted index and tombstones are never attached to a
// lease and never deleted: they outlive the job's removal and the
// registration (and lease) of the boot that wrote them.
func TestClaimsAndAcceptanceOutliveLeaseAndRemoval(t *testing.T) {
	a, b, _ := pair(t)
	ctx := context.Background()
	m, err := a.Join(ctx, store.HostBoot{Host: "h1", Boot: "boot-1", Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	hb := m.HostBoot()
	j := storetest.NewJob("kept")
	desc := protocol.WorkerDescriptor{Machine: protocol.MachineNox, Environment: protocol.EnvPublicStateless, ProofProfile: protocol.ProfilePublicTrace,
		Network: "local", Executor: protocol.Executor{Warrior: protocol.WarriorNoxWorker, Version: "t", Backend: protocol.BackendIsolatedProcess,
			WorkerID: "w", DeviceID: "d", BootID: hb.Boot}, MaxArgumentBytes: 1}
	mustUpdate(t, a, func(tx store.Tx) error {
		if err := storetest.Create(tx, j); err != nil {
			return err
		}
		job, err := tx.Job(j.ID)
		if err != nil {
			return err
		}
		job.Attempts = 1
		if err := tx.PutJob(job); err != nil {
			return err
		}
		if err := tx.PutAttempt(&store.Attempt{Job: j.ID, N: 1, Host: hb.Host, Boot: hb.Boot, Generation: hb.Generation, State: lifecycle.Queued}); err != nil {
			return err
		}
		return tx.RecordJobClaim(&store.JobClaim{Job: j.ID, Attempt: 1, Generation: hb.Generation, Worker: desc})
	})
	mustUpdate(t, a, func(tx store.Tx) error {
		at, err := tx.Attempt(j.ID, 1)
		if err != nil {
			return err
		}
		at.Verified = []byte(`{}`)
		for _, st := range []lifecycle.State{lifecycle.Running, lifecycle.Produced, lifecycle.Verified, lifecycle.Accepted} {
			at.State = st
			if err := tx.PutAttempt(at); err != nil {
				return err
			}
		}
		job, err := tx.Job(j.ID)
		if err != nil {
			return err
		}
		job.State, job.Accepted, job.Result = lifecycle.Accepted, 1, []byte(`{}`)
		return tx.PutJob(job)
	})
	mustUpdate(t, b, func(tx store.Tx) error {
		_, err := tx.RemoveJob(j.ID, time.Now())
		return err
	})
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{a.k.accepted(j.ID), a.k.jobClaim(j.ID, 1), a.k.tombstone(j.ID)} {
		resp, err := b.cli.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 || resp.Kvs[0].Lease != 0 {
			t.Errorf("%q after the job's removal and its boot's departure: %+v", k, resp.Kvs)
		}
	}
	if resp, err := b.cli.Get(ctx, a.k.job(j.ID)); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("the removed job's record: %+v %v", resp, err)
	}
}

// The neuron's and the host acts' records stay in each home's own store
// (docs/cluster.md, "Host acts stay local"): the shared store's
// transactions are job transactions and nothing more, so no fencing
// record can be asked of it. Before the job and fencing transactions
// were split, its transactions carried every fencing method as a stub.
func TestLocalRecordsNotOffered(t *testing.T) {
	a, _, _ := pair(t)
	var s store.Store = a
	if _, ok := s.(interface{ Fencing() store.Fencing }); ok {
		t.Error("the shared store offers a fencing store")
	}
	err := s.View(context.Background(), func(tx store.Tx) error {
		if _, ok := tx.(store.NeuronTx); ok {
			t.Error("a shared store's transaction has the neuron's records")
		}
		if _, ok := tx.(store.InvocationTx); ok {
			t.Error("a shared store's transaction has invocations")
		}
		if _, ok := tx.(store.ActTx); ok {
			t.Error("a shared store's transaction has host acts")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
