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
// verifies of its own records, for microseconds instead of a
// signature's tens to hundreds (docs/fencing.md, "Authenticated
// records"). Like the key, it prints, logs and marshals as a redaction.
type RecordKey struct {
	// pool keeps keyed HMAC states with their scratch: keying one costs
	// two SHA-256 blocks and allocations that a tag per record read
	// should not pay. A pointer, so that the redactions' value receivers
	// copy no pool.
	pool *sync.Pool
}

// tagState is a keyed HMAC and the buffers a tag is made in (on the
// heap with it, not at every call).
type tagState struct {
	h   hash.Hash
	n   [4]byte
	sum [RecordTagSize]byte
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
	return &RecordKey{pool: &sync.Pool{New: func() any { return &tagState{h: hmac.New(sha256.New, mac)} }}}
}

// tag computes the tag of the fields into st.sum. Each field is written
// with its length, so no two field lists share a tag input.
func (st *tagState) tag(fields [][]byte) {
	st.h.Reset()
	for _, f := range fields {
		binary.BigEndian.PutUint32(st.n[:], uint32(len(f)))
		st.h.Write(st.n[:])
		st.h.Write(f)
	}
	st.h.Sum(st.sum[:0])
}

// Tag appends to dst the tag of the fields, in order.
func (r *RecordKey) Tag(dst []byte, fields ...[]byte) []byte {
	st := r.pool.Get().(*tagState)
	st.tag(fields)
	dst = append(dst, st.sum[:]...)
	r.pool.Put(st)
	return dst
}

// Verify reports whether tag is the tag of the fields (in constant time).
func (r *RecordKey) Verify(tag []byte, fields ...[]byte) bool {
	if len(tag) != RecordTagSize {
		return false
	}
	st := r.pool.Get().(*tagState)
	st.tag(fields)
	ok := hmac.Equal(tag, st.sum[:])
	r.pool.Put(st)
	return ok
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
