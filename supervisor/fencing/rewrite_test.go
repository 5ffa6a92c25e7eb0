package fencing

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// A record as the file holds it (docs/store.md, docs/fencing.md): the
// payload, then for a fencing record a zero byte and its 32-byte tag,
// then a CRC-32C of bucket, 0, key and what precedes it. The helpers
// here write records as a writer of the file does, without the store's
// code: the seal is a checksum anyone can recompute; the tag needs the
// record key, which only the vault's holder has.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sealValue seals p under bucket and key.
func sealValue(bucket, key, p []byte) []byte {
	c := crc32.Update(0, castagnoli, bucket)
	c = crc32.Update(c, castagnoli, []byte{0})
	c = crc32.Update(c, castagnoli, key)
	c = crc32.Update(c, castagnoli, p)
	return binary.BigEndian.AppendUint32(append([]byte(nil), p...), c)
}

// recordPayload is the payload of a stored value: without its seal, and
// without its tag when it has one.
func recordPayload(v []byte) []byte {
	p := v[:len(v)-4]
	if n := len(p) - 1 - neuron.RecordTagSize; n >= 0 && p[n] == 0 {
		return p[:n]
	}
	return p
}

// storedValue is what a writer puts under bucket and key for payload p:
// tagged with rk when it has the record key (nil: it has not).
func storedValue(bucket, key, p []byte, rk *neuron.RecordKey) []byte {
	if rk != nil {
		p = rk.Tag(append(append([]byte(nil), p...), 0), bucket, key, p)
	}
	return sealValue(bucket, key, p)
}

// rewriteRecord replaces the record under bucket and key of the store
// file at path by edit of its payload, written as storedValue writes it.
func rewriteRecord(path, bucket string, key []byte, rk *neuron.RecordKey, edit func([]byte) ([]byte, error)) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		v := b.Get(key)
		if v == nil {
			return fmt.Errorf("%s/%q: no record", bucket, key)
		}
		p, err := edit(recordPayload(v))
		if err != nil {
			return err
		}
		return b.Put(key, storedValue([]byte(bucket), key, p, rk))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}
