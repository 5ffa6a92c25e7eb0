package bolt

import (
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// A frozen spec is a record of the specs bucket, under its job's id,
// unless it is large: then it is a bucket of its own there, specs/<id>,
// holding the record under specKey (schema 8).
//
// bbolt keeps at least two keys in a leaf, and up to four whatever their
// size, and a commit that changes a leaf writes all of it again. A
// verify job's spec carries its artifact inline (up to 48 MiB): stored as
// a record, it shared its leaf with the specs of the jobs whose ids sort
// next to it, and the write of any of them (a submission, a removal)
// wrote it again, through a page buffer of its size in the writer's
// heap, and copied it once more when the write grew the file past
// bbolt's mapping: measured, a 1 KiB spec stored beside 8 and 40 MiB ones
// allocated 58 MiB. In a bucket of its own, a large spec is written once,
// on pages of its own; its leaf in the specs bucket holds its bucket's
// 16-byte header.

// specBucketFrom is the size from which a spec is a bucket of its own: a
// leaf of smaller specs rewrites at most four of them (64 KiB).
const specBucketFrom = 16 << 10

// specKey is the key of the record in a spec's own bucket.
var specKey = []byte("spec")

// specPath is the name a spec's own bucket seals its record with, as the
// page check walks it: specs/<id>.
func specPath(id []byte) []byte {
	return append(append(append([]byte(nil), bucketSpecs...), '/'), id...)
}

// spec returns job id's frozen spec, nil if there is none. It shares
// bbolt's memory: valid inside the transaction only.
func (t *boltTx) spec(id []byte) ([]byte, error) {
	specs := t.bucket(bucketSpecs)
	own := specs.b.Bucket(id)
	if own == nil {
		return specs.get(id)
	}
	r := records{b: own, name: specPath(id), file: t.s.path}
	v, err := r.get(specKey)
	if err == nil && v == nil {
		return nil, r.damaged(specKey, "the spec's bucket holds no spec")
	}
	return v, err
}

// putSpec stores job id's frozen spec, which the store owns from here on
// (Tx.CreateJob): a large one in a bucket of its own.
func (t *boltTx) putSpec(id, spec []byte) error {
	specs := t.bucket(bucketSpecs)
	if len(spec) < specBucketFrom {
		return specs.putOwned(id, spec)
	}
	own, err := specs.b.CreateBucket(id)
	if err != nil {
		return fmt.Errorf("spec bucket: %w", err)
	}
	return records{b: own, name: specPath(id), file: t.s.path}.putOwned(specKey, spec)
}

// deleteSpec removes job id's frozen spec, a record or a bucket.
func (t *boltTx) deleteSpec(id []byte) error {
	specs := t.tx.Bucket(bucketSpecs)
	if specs.Bucket(id) != nil {
		return specs.DeleteBucket(id)
	}
	return specs.Delete(id)
}

// forEachSpec calls fn with every frozen spec, sealed or not as each
// record is, and with the problems of a spec's own bucket (a record it
// should not hold, or no spec).
func forEachSpec(specs *bbolt.Bucket, fn func(id, key, value []byte, bucket []byte), problem func(string, ...any)) {
	_ = specs.ForEach(func(k, v []byte) error {
		if v != nil {
			fn(k, k, v, bucketSpecs)
			return nil
		}
		own, found := specs.Bucket(k), false
		_ = own.ForEach(func(key, value []byte) error {
			switch {
			case string(key) != string(specKey) || value == nil:
				problem("%s/%s: holds %s, not its spec", bucketSpecs, store.PrintableKey(k), store.PrintableKey(key))
			default:
				found = true
				fn(k, key, value, specPath(k))
			}
			return nil
		})
		if !found {
			problem("%s/%s: a spec's bucket without its spec", bucketSpecs, store.PrintableKey(k))
		}
		return nil
	})
}
