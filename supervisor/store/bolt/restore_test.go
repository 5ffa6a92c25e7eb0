package bolt

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// TestBackupSaysItIsOne: a copy written by WriteBackup carries a backup
// mark in its meta record (the boot it was taken in), which a check of
// it reports; the store it was taken from carries none.
func TestBackupSaysItIsOne(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	populate(t, s, 3)
	ctx := context.Background()
	var meta store.Meta
	if err := s.Local().View(ctx, func(tx store.LocalTx) (err error) { meta, err = tx.Meta(); return err }); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "b.db")
	rep, err := WriteBackup(dst, func(w io.Writer) (int64, error) { return s.Backup(ctx, w) })
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("backup: %+v %v", rep, err)
	}
	if rep.Backup == nil || rep.Backup.Boots != meta.Boots || rep.Backup.Boot != meta.Boot || rep.Backup.Taken.IsZero() {
		t.Fatalf("the copy's check reports backup %+v (meta %+v)", rep.Backup, meta)
	}
	if again, err := CheckFile(dst, time.Second); err != nil || again.Backup == nil {
		t.Fatalf("check of the copy: %+v %v", again, err)
	}
	if own, err := s.Check(ctx); err != nil || own.Backup != nil {
		t.Fatalf("the store itself reads as a backup: %+v %v", own, err)
	}
}

// TestInstallStore: a file is put in place of the home's store only
// while no supervisor owns it; the current file is kept aside, whole,
// and the hook runs before anything moves.
func TestInstallStore(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	populate(t, s, 4)
	ctx := context.Background()
	backup := filepath.Join(t.TempDir(), "b.db")
	if _, err := WriteBackup(backup, func(w io.Writer) (int64, error) { return s.Backup(ctx, w) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Local().Update(ctx, func(tx store.LocalTx) error {
		now := time.Now().UTC()
		j := &store.Job{ID: "later", SpecDigest: store.SpecDigest(specOf("later")), State: lifecycle.Queued, Seq: 99,
			Retry: store.RetryPolicy{MaxAttempts: 1}, Created: now, Updated: now}
		return tx.CreateJob(j, specOf("later"))
	}); err != nil {
		t.Fatal(err)
	}
	ran := false
	if _, err := InstallStore(dir, backup, func() error { ran = true; return nil }); !errors.Is(err, store.ErrLocked) || ran {
		t.Fatalf("install over an owned store: %v (hook ran %v)", err, ran)
	}
	s.Close()
	aside, err := InstallStore(dir, backup, func() error { ran = true; return nil })
	if err != nil || !ran || aside == "" {
		t.Fatalf("install: %q %v (hook ran %v)", aside, err, ran)
	}
	if rep, err := CheckFile(aside, time.Second); err != nil || rep.Jobs != 5 || rep.Backup != nil {
		t.Fatalf("the file kept aside: %+v %v", rep, err)
	}
	rep, err := CheckFile(filepath.Join(dir, FileName), time.Second)
	if err != nil || rep.Jobs != 4 || rep.Backup == nil || len(rep.Problems) != 0 {
		t.Fatalf("the installed store: %+v %v", rep, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, FileName)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	// A hook that fails moves nothing.
	if _, err := InstallStore(dir, aside, func() error { return errors.New("no") }); err == nil {
		t.Fatal("a failed hook installed the file")
	}
	if rep, _ := CheckFile(filepath.Join(dir, FileName), time.Second); rep.Jobs != 4 {
		t.Fatalf("after a failed hook the store has %d jobs", rep.Jobs)
	}
}

// TestFencedInvocationsAreNeverDispatched: once a restore fenced the
// store (Meta.Fence), an invocation it fenced gets no worker attempt —
// only a restored (or manual) one, which is never claimed — while an
// invocation made after the fence is dispatched as before; and a
// restored attempt is refused for an invocation the fence did not
// cover. Skipping the invocation seqs moves every later id past the
// lost ones.
func TestFencedInvocationsAreNeverDispatched(t *testing.T) {
	f := newFx(t)
	p, inv := f.setup()
	op := f.operation(inv, 0)
	f.must(f.update(func(tx store.LocalTx) error { return tx.CreateOperation(op) }))
	var seq uint64
	f.must(f.update(func(tx store.LocalTx) error {
		rt := tx.(RestoreTx)
		seq = rt.InvocationSeq()
		m, err := tx.Meta()
		if err != nil {
			return err
		}
		m.Fence = &store.RestoreFence{At: f.now, Restores: 1, Invocations: seq, Reason: "test"}
		if err := tx.PutMeta(m); err != nil {
			return err
		}
		return rt.SkipInvocationSeqs(seq + 1000)
	}))
	if err := f.update(func(tx store.LocalTx) error { return tx.RecordAttempt(f.attempt(op, 1, worker("b1"))) }); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("a worker attempt of a fenced invocation: %v", err)
	}
	restored := f.attempt(op, 0, nil)
	restored.Executor = store.ExecutorRestored
	restored.Authorization = f.sign(restored.Statement())
	f.must(f.update(func(tx store.LocalTx) error { return tx.RecordAttempt(restored) }))
	if err := f.update(func(tx store.LocalTx) error { return tx.RecordClaim(f.claim(op, 1, worker("b1"))) }); err == nil {
		t.Fatal("a restored attempt was claimed")
	}

	later := &store.Invocation{Neuron: f.key.ID(), Network: "testnet", Prog: p.ID, Limit: 100, Epoch: 1,
		Status: store.InvocationRunning, Inputs: store.U64s{8}, Created: f.now, Updated: f.now}
	f.must(f.update(func(tx store.LocalTx) error { return tx.CreateInvocation(later) }))
	if later.Seq != seq+1001 {
		t.Fatalf("the invocation after the fence has seq %d, want %d", later.Seq, seq+1001)
	}
	op2 := f.operation(later, 0)
	f.must(f.update(func(tx store.LocalTx) error { return tx.CreateOperation(op2) }))
	wrong := f.attempt(op2, 0, nil)
	wrong.Executor = store.ExecutorRestored
	wrong.Authorization = f.sign(wrong.Statement())
	if err := f.update(func(tx store.LocalTx) error { return tx.RecordAttempt(wrong) }); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("a restored attempt of an invocation made after the fence: %v", err)
	}
	f.must(f.update(func(tx store.LocalTx) error { return tx.RecordAttempt(f.attempt(op2, 1, worker("b1"))) }))
	f.must(f.update(func(tx store.LocalTx) error { return tx.RecordClaim(f.claim(op2, 1, worker("b1"))) }))
	rep, err := f.s.Check(context.Background())
	if err != nil || len(rep.Problems) != 0 || rep.Fence == nil || rep.Fence.Invocations != seq {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

// TestForgetJob: a job a restored store forgot leaves a tombstone that
// says so (no digest, unknown), which the check accepts; the store's own
// jobs and tombstones are left as they are. A tombstone with no digest
// that does not say it is a restore's is still a problem.
func TestForgetJob(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	populate(t, s, 3)
	ctx := context.Background()
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	if err := s.Local().Update(ctx, func(tx store.LocalTx) error {
		rt := tx.(RestoreTx)
		for _, id := range []string{"gone", "job-0001", "gone"} {
			if err := rt.ForgetJob(id, at); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	err := s.Local().View(ctx, func(tx store.LocalTx) error {
		ts, err := tx.Tombstone("gone")
		if err != nil || !ts.Restored || ts.SpecDigest != "" || ts.State != lifecycle.Unknown || !ts.Removed.Equal(at) {
			t.Fatalf("tombstone of a forgotten job: %+v %v", ts, err)
		}
		if _, err := tx.Tombstone("job-0001"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a known job got a tombstone: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Check(ctx)
	if err != nil || len(rep.Problems) != 0 || rep.Tombstones != 1 {
		t.Fatalf("check: %+v %v", rep, err)
	}
	if err := s.Local().Update(ctx, func(tx store.LocalTx) error {
		return tx.(*boltTx).bucket(bucketTombstones).putJSON([]byte("bad"), &store.Tombstone{ID: "bad", State: lifecycle.Unknown})
	}); err != nil {
		t.Fatal(err)
	}
	if rep, _ := s.Check(ctx); len(rep.Problems) != 1 {
		t.Fatalf("a digestless tombstone not a restore's: %v", rep.Problems)
	}
}
