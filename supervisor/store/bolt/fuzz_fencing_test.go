package bolt

import (
	"context"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// FuzzFencingRecords writes arbitrary bytes, sealed, as a record of each
// fencing bucket and reads them through the store's readers and its
// check: a hostile or damaged record is refused with an error, never
// trusted and never a panic.
func FuzzFencingRecords(f *testing.F) {
	fx := newFx(f)
	_, inv := fx.setup()
	op := fx.operation(inv, 0)
	fx.must(fx.update(func(tx store.LocalTx) error {
		if err := tx.CreateOperation(op); err != nil {
			return err
		}
		return tx.RecordAttempt(fx.attempt(op, 1, worker("b1")))
	}))
	for _, seed := range []string{`{}`, `{"neuron":"00"}`, `[]`, `null`, `{"worker":{"machine":"x"}}`, "\xff"} {
		f.Add(uint8(0), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		buckets := [][]byte{bucketNeuron, bucketGrants, bucketProgs, bucketInvocations, bucketOperations, bucketActAttempts, bucketClaims, bucketOutcomes, bucketReservations}
		b := buckets[int(which)%len(buckets)]
		keys := map[string][]byte{string(bucketNeuron): keyRoot, string(bucketGrants): make([]byte, 8), string(bucketProgs): []byte(inv.Prog),
			string(bucketInvocations): []byte(inv.ID), string(bucketOperations): []byte(op.ID), string(bucketReservations): []byte(inv.ID)}
		key, ok := keys[string(b)]
		if !ok {
			key = opKey(op.ID, 1)
		}
		s := fx.s
		err := s.update(func(btx *bbolt.Tx) error { return btx.Bucket(b).Put(key, seal(b, key, payload)) })
		if err != nil {
			t.Skip()
		}
		_ = s.Local().View(context.Background(), func(tx store.LocalTx) error {
			tx.Root()
			tx.Grant()
			tx.Prog(inv.Prog)
			tx.Invocation(inv.ID)
			tx.Operations(inv.ID)
			tx.ActAttempts(op.ID)
			tx.Claim(op.ID, 1)
			tx.Outcome(op.ID, 1)
			tx.Reservation(inv.ID)
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Check(ctx)
	})
}
