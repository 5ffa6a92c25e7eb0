package bolt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Authenticated records (schema 7, docs/fencing.md "Authenticated
// records"). A seal is a checksum: anyone who can write the file can
// recompute it, so before schema 7 a writer without the vault could
// change an unsigned fencing record (a proposal's argument, an outcome,
// an invocation's inputs, a prog's program) and the daemon acted on it.
// Now every value of every fencing bucket carries a tag under the
// neuron's record key (neuron.RecordKey: HMAC-SHA256 under a key derived
// from the vault's secret) over its bucket, key and payload:
//
//	value = payload ‖ 0x00 ‖ tag (32 bytes), then sealed as every value
//
// A JSON payload never holds a raw 0x00 byte (encoding/json escapes it),
// nor does an index value (an id, or nothing), so a value of the format
// before, without a tag, never reads as tagged. Every read checks the
// tag; signed records keep their signatures as well (they are the
// evidence that others verify with the public key). A writer without
// the vault can no longer alter, add or move a record; it can still
// delete one, or put back a copy of an earlier one (docs/fencing.md).

// tagSuffix is what a tag adds to a payload: the mark and the tag.
const tagSuffix = 1 + neuron.RecordTagSize

// splitTag splits a tagged payload; ok is false for a value without a
// tag (written before schema 7, or in a home without a neuron).
func splitTag(p []byte) (payload, tag []byte, ok bool) {
	if len(p) < tagSuffix || p[len(p)-tagSuffix] != 0 {
		return p, nil, false
	}
	return p[:len(p)-tagSuffix], p[len(p)-neuron.RecordTagSize:], true
}

// isFencingBucket reports whether the bucket's records are
// authenticated: every fencing bucket (its records, its indexes).
func isFencingBucket(name []byte) bool {
	switch string(name) {
	case "neuron", "grants", "progs", "invocations", "prog_live", "archive", "reservations", "operations",
		"op_index", "act_attempts", "claims", "outcomes", "job_claims", "prog_revisions", "children":
		return true
	}
	return false
}

// appendTag appends the mark and the tag of payload (stored under
// bucket and key) to payload, in place when its capacity allows: the
// payload's own bytes stay as they were.
func appendTag(k *neuron.RecordKey, bucket, key, payload []byte) []byte {
	out := append(payload[:len(payload):cap(payload)], 0)
	return k.Tag(out, bucket, key, payload)
}

// recordKey is the key that tags and checks records (nil: none).
func (s *Store) recordKey() *neuron.RecordKey { return s.trust.RecordKey() }

// tagged is the payload to store under a fencing bucket's key: tagged
// with the record key. A store without the key writes untagged records
// only where they are legitimate without one: the claims of job attempts
// in a home that has no neuron.
func (t *boltTx) tagged(bucket, key, payload []byte) ([]byte, error) {
	if k := t.s.recordKey(); k != nil {
		v := appendTag(k, bucket, key, payload)
		// v is the caller's to give to bbolt, which keeps it as it is
		// (the seal goes past its end): remembered without a copy.
		t.s.tags.add(bucket, key, v, false)
		return v, nil
	}
	if bytes.Equal(bucket, bucketJobClaims) && !t.has(bucketNeuron, keyRoot) {
		return payload, nil
	}
	return nil, fmt.Errorf("write %s/%s: %w", bucket, store.PrintableKey(key), store.ErrUntrusted)
}

// authenticate checks the tag of a fencing record read from the file
// and returns its payload. A record without a tag is taken only where
// the store has none to give (legacyAllowed).
func (t *boltTx) authenticate(bucket, key, p []byte) ([]byte, error) {
	payload, tag, ok := splitTag(p)
	if ok {
		k := t.s.recordKey()
		if k == nil {
			return nil, fmt.Errorf("%s: %w: the record is authenticated by the neuron's key", store.RecordName(bucket, key), store.ErrUntrusted)
		}
		if t.s.tags.has(bucket, key, p) {
			return payload, nil
		}
		if !k.Verify(tag, bucket, key, payload) {
			if err := t.anotherSubject(bucket, key); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%s: %w: its tag does not verify (it was written or altered without the vault)",
				store.RecordName(bucket, key), store.ErrUnauthenticated)
		}
		t.s.tags.add(bucket, key, p, true)
		return payload, nil
	}
	if err := t.legacyAllowed(bucket, key, p); err != nil {
		return nil, err
	}
	return p, nil
}

// recordsField is how a root's JSON names its Records (left out when
// empty: a root of schema 6 never has it).
var recordsField = []byte(`"records":`)

// legacyAllowed decides whether a fencing record without a tag may be
// read: only while the store's root says its records are not
// authenticated yet (a root of schema 6, whose signature verifies: the
// first start with the key tags them all, AuthenticateRecords), and in a
// home without a neuron, the job claims it made without one. A root
// that says RecordsAuthenticated never comes without its tag, and, being
// signed, cannot be made to say otherwise.
func (t *boltTx) legacyAllowed(bucket, key, p []byte) error {
	if bytes.Equal(bucket, bucketNeuron) && bytes.Equal(key, keyRoot) {
		// The root is checked by its reader (its signature); one that
		// says its records are authenticated has lost its tag.
		if bytes.Contains(p, recordsField) {
			return fmt.Errorf("%s: %w: a root that says its records are authenticated, without its tag", store.RecordName(bucketNeuron, keyRoot), store.ErrUnauthenticated)
		}
		return nil
	}
	root, err := t.rootView()
	switch {
	case err == nil && root.Records == "":
		return nil
	case err == nil:
		return fmt.Errorf("%s: %w: it has no tag, and every record of this store has one (it was written without the vault)",
			store.RecordName(bucket, key), store.ErrUnauthenticated)
	case errors.Is(err, store.ErrNotFound) && bytes.Equal(bucket, bucketJobClaims):
		return nil
	case errors.Is(err, store.ErrUntrusted):
		return fmt.Errorf("%s: %w", store.RecordName(bucket, key), store.ErrUntrusted)
	}
	return fmt.Errorf("%s: %w: it has no tag, and no neuron root vouches for records without one (%v)",
		store.RecordName(bucket, key), store.ErrUnauthenticated, err)
}

// anotherSubject is ErrSubject for a record whose tag does not verify
// when the store's root is another neuron's: it names another key than
// the trusted one and its signature verifies under that key. The vault
// holds another neuron's key, whose record key tags nothing of this
// store: that is the subject's refusal (denied), not a record altered in
// the file (a root altered to name another key does not verify under
// it). It costs a read of the root, on a record that is refused anyway.
func (t *boltTx) anotherSubject(bucket, key []byte) error {
	trust := t.s.trust.Key()
	if trust == nil {
		return nil
	}
	v := t.tx.Bucket(bucketNeuron).Get(keyRoot)
	p, ok := unseal(bucketNeuron, keyRoot, v)
	if v == nil || !ok {
		return nil
	}
	p, _, _ = splitTag(p)
	var r store.Root
	if json.Unmarshal(p, &r) != nil || r.PublicKey == *trust || !r.PublicKey.Verify(r.Statement(), r.Signature) {
		return nil
	}
	return fmt.Errorf("%s: %w (neuron %s, the vault's key is neuron %s)", store.RecordName(bucket, key), store.ErrSubject, r.Neuron, trust.ID())
}

// tagCache remembers the stored bytes (payload, mark and tag) of fencing
// records whose tag verified, or that this process tagged, by bucket
// and key: a record read again with the same bytes is not checked
// again. A tag is a function of the bucket, the key, the bytes and the
// one record key, so equal bytes verify alike; altered bytes miss and
// are checked. A bytes.Equal of a few hundred bytes costs a small part
// of an HMAC, and the dispatch path reads the root, the grant, the
// invocation and its operation several times per act, most of it in
// the group commit's single writer (docs/fencing.md, "Authenticated
// records").
type tagCache struct {
	mu sync.Mutex
	n  int
	m  map[string]map[string][]byte
}

// maxTagged bounds the records remembered (a few MiB of payloads).
const maxTagged = 4096

func (c *tagCache) has(bucket, key, v []byte) bool {
	c.mu.Lock()
	got, ok := c.m[string(bucket)][string(key)]
	c.mu.Unlock()
	return ok && bytes.Equal(got, v)
}

// add remembers v under bucket and key: a copy of it when it is
// borrowed (bbolt's memory, valid in its transaction only).
func (c *tagCache) add(bucket, key, v []byte, borrowed bool) {
	if borrowed {
		v = bytes.Clone(v)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]map[string][]byte{}
	}
	b := c.m[string(bucket)]
	if b == nil {
		b = map[string][]byte{}
		c.m[string(bucket)] = b
	}
	if _, ok := b[string(key)]; !ok {
		if c.n >= maxTagged {
			c.evictOne()
		}
		c.n++
	}
	b[string(key)] = v
}

// evictOne drops an arbitrary record.
func (c *tagCache) evictOne() {
	for _, b := range c.m {
		for k := range b {
			delete(b, k)
			c.n--
			return
		}
	}
}
