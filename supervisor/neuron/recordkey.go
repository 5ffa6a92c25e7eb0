package neuron

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"sync"
)

// RecordTagSize is the length of a record's authentication tag.
const RecordTagSize = sha256.Size

// recordKeyInfo is HKDF's info for the record key: it separates the
// record key from every other use of the neuron's secret (BIP-340 signs
// with the scalar itself; its nonces are tagged hashes of their own).
const recordKeyInfo = "cyber/neuron/v1/record-key"

// RecordKey authenticates the records a home's store keeps: a tag is
// HMAC-SHA256 under a key derived from the neuron's secret (HKDF-SHA256),
// so the vault's holder makes and checks tags and nobody else can make
// one. A signature is what others verify; a tag is what this home
// verifies of its own records, for a few hundred nanoseconds instead of
// a signature's tens of microseconds (docs/fencing.md, "Authenticated
// records"). Like the key, it prints, logs and marshals as a redaction.
type RecordKey struct {
	// pool keeps keyed HMAC states: keying one costs two SHA-256
	// blocks and allocations that a tag per record read should not pay.
	// A pointer, so that the redactions' value receivers copy no pool.
	pool *sync.Pool
}

// RecordKey derives the key that authenticates this neuron's records.
// The same secret gives the same record key in every process.
func (k *Key) RecordKey() *RecordKey {
	secret := k.secret()
	defer clear(secret[:])
	mac, err := hkdf.Key(sha256.New, secret[:], nil, recordKeyInfo, sha256.Size)
	if err != nil {
		// HKDF-SHA256 fails only for a key longer than 255 blocks.
		panic("derive the record key: " + err.Error())
	}
	return &RecordKey{pool: &sync.Pool{New: func() any { return hmac.New(sha256.New, mac) }}}
}

// Tag appends to dst the tag of the fields, in order. Each field is
// written with its length, so no two field lists share a tag input.
func (r *RecordKey) Tag(dst []byte, fields ...[]byte) []byte {
	h := r.pool.Get().(hash.Hash)
	h.Reset()
	var n [4]byte
	for _, f := range fields {
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	dst = h.Sum(dst)
	r.pool.Put(h)
	return dst
}

// Verify reports whether tag is the tag of the fields (in constant time).
func (r *RecordKey) Verify(tag []byte, fields ...[]byte) bool {
	var buf [RecordTagSize]byte
	return len(tag) == RecordTagSize && hmac.Equal(tag, r.Tag(buf[:0], fields...))
}

const redactedRecordKey = "neuron record key (redacted)"

func (RecordKey) String() string                 { return redactedRecordKey }
func (RecordKey) GoString() string               { return redactedRecordKey }
func (RecordKey) Format(f fmt.State, _ rune)     { f.Write([]byte(redactedRecordKey)) }
func (RecordKey) LogValue() slog.Value           { return slog.StringValue(redactedRecordKey) }
func (RecordKey) MarshalJSON() ([]byte, error)   { return nil, errRecordKeyNeverMarshalled }
func (RecordKey) MarshalText() ([]byte, error)   { return nil, errRecordKeyNeverMarshalled }
func (RecordKey) MarshalBinary() ([]byte, error) { return nil, errRecordKeyNeverMarshalled }

var errRecordKeyNeverMarshalled = errors.New("a neuron record key is never marshalled")
