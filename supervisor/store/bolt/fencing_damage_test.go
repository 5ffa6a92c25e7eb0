package bolt

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// TestConsumeRefusesAProposalWithAnAttempt: an operation record of one
// whose attempt is recorded that reads "proposed" again, with its
// attempt's number or without it, is never consumed as a proposal
// nobody attempted: that would drop an attempt whose act may have run,
// silently (a cancel did, and the invocation ended cancelled with its
// claimed attempt unknown and never reconciled). Written without the
// vault (sealed again, which anyone can do) it is refused for its tag;
// written with a valid tag (a bug of the supervisor's own) it is still
// refused by the store's rules. store check names it, before and after.
func TestConsumeRefusesAProposalWithAnAttempt(t *testing.T) {
	for _, keepN := range []bool{true, false} {
		f := newFx(t)
		_, inv := f.setup()
		op := f.operation(inv, 0)
		f.must(f.update(func(tx store.LocalTx) error { return tx.CreateOperation(op) }))
		f.must(f.update(func(tx store.LocalTx) error { return tx.RecordAttempt(f.attempt(op, 1, worker("b1"))) }))
		f.must(f.update(func(tx store.LocalTx) error { return tx.RecordClaim(f.claim(op, 1, worker("b1"))) }))
		var cur *store.Operation
		f.must(f.s.Local().View(context.Background(), func(tx store.LocalTx) (err error) { cur, err = tx.Operation(op.ID); return err }))
		cur.Stage = store.StageProposed
		if !keepN {
			cur.Attempt = 0
		}
		payload, err := json.Marshal(cur)
		f.must(err)
		f.must(f.s.db.Update(func(btx *bbolt.Tx) error {
			return btx.Bucket(bucketOperations).Put([]byte(op.ID), seal(bucketOperations, []byte(op.ID), payload))
		}))
		wantErr(t, "consuming a proposal altered without the vault", f.update(func(tx store.LocalTx) error { return tx.ConsumeOperation(op.ID) }), store.ErrUnauthenticated)
		f.putTagged(bucketOperations, []byte(op.ID), payload)
		wantErr(t, "consuming an altered proposal with an attempt", f.update(func(tx store.LocalTx) error { return tx.ConsumeOperation(op.ID) }), store.ErrInvariant)
		rep, err := f.s.Check(context.Background())
		f.must(err)
		if !strings.Contains(strings.Join(rep.Problems, "\n"), "not the recorded attempt of its operation") {
			t.Fatalf("store check of a proposal with an attempt: %v", rep.Problems)
		}
		// What such a consume left: consumed, its attempt without an
		// outcome.
		cur.Stage, cur.Attempt = store.StageConsumed, 1
		payload, err = json.Marshal(cur)
		f.must(err)
		f.putTagged(bucketOperations, []byte(op.ID), payload)
		rep, err = f.s.Check(context.Background())
		f.must(err)
		if !strings.Contains(strings.Join(rep.Problems, "\n"), "consumed, but attempt 1 has no outcome") {
			t.Fatalf("store check of a consumed operation without its outcome: %v", rep.Problems)
		}
	}
}

// putTagged writes payload under bucket and key with its tag, as this
// process's store would: what a bug of the supervisor's own could write.
func (f *fx) putTagged(bucket, key, payload []byte) {
	f.t.Helper()
	f.must(f.s.db.Update(func(btx *bbolt.Tx) error {
		return btx.Bucket(bucket).Put(key, seal(bucket, key, appendTag(f.key.RecordKey(), bucket, key, payload)))
	}))
}
