package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// checkAuth is what a store check does with the fencing records'
// authentication tags (authenticated.go): every tag verifies under the
// record key (when the check has it); a record without one is a problem
// unless the store's root predates schema 7 (its records are counted as
// unauthenticated, and the next start with the key tags them), or it is
// a job claim of a home without a neuron; a tagged record beside a root
// of schema 6 says that root was put back.
type checkAuth struct {
	keys checkKeys
	rep  *CheckReport
	mode authMode
}

type authMode int

const (
	authStrict authMode = iota // the root says its records are authenticated
	authLegacy                 // a root of schema 6
	authNoRoot                 // no neuron: only job claims, without tags
)

func newCheckAuth(tx *bbolt.Tx, keys checkKeys, rep *CheckReport) *checkAuth {
	c := &checkAuth{keys: keys, rep: rep, mode: authStrict}
	b := tx.Bucket(bucketNeuron)
	if b == nil {
		return c
	}
	v := b.Get(keyRoot)
	if v == nil {
		c.mode = authNoRoot
		return c
	}
	p, ok := unseal(bucketNeuron, keyRoot, v)
	if !ok {
		return c
	}
	payload, _, _ := splitTag(p)
	var r store.Root
	if err := json.Unmarshal(payload, &r); err != nil || r.Records != "" {
		return c
	}
	// A root of schema 6 vouches for records without tags only if it is
	// the neuron's (when the check can tell).
	if keys.pub == nil || keys.pub.Verify(r.Statement(), r.Signature) {
		c.mode = authLegacy
	}
	return c
}

// open checks the tag of a fencing record's payload p and returns the
// record's own payload.
func (c *checkAuth) open(bucket, key, p []byte) ([]byte, error) {
	isRoot := bytes.Equal(bucket, bucketNeuron) && bytes.Equal(key, keyRoot)
	payload, tag, ok := splitTag(p)
	switch {
	case ok && c.mode == authLegacy && !isRoot:
		return nil, fmt.Errorf("%s: %w: it carries a tag, beside a root of schema 6", store.RecordName(bucket, key), store.ErrRootPutBack)
	case ok && c.keys.rec != nil && !c.keys.rec.Verify(tag, bucket, key, payload):
		return nil, fmt.Errorf("%s: %w: its tag does not verify (it was written or altered without the vault)", store.RecordName(bucket, key), store.ErrUnauthenticated)
	case ok:
		return payload, nil
	case isRoot && bytes.Contains(p, recordsField):
		return nil, fmt.Errorf("%s: %w: a root that says its records are authenticated, without its tag", store.RecordName(bucketNeuron, keyRoot), store.ErrUnauthenticated)
	case isRoot || c.mode == authLegacy:
		c.rep.Unauthenticated++
		return p, nil
	case c.mode == authNoRoot && bytes.Equal(bucket, bucketJobClaims):
		return p, nil
	case c.mode == authNoRoot:
		return nil, fmt.Errorf("%s: %w: it has no tag, and the store has no neuron root (only job claims are written without one)", store.RecordName(bucket, key), store.ErrUnauthenticated)
	}
	return nil, fmt.Errorf("%s: %w: it has no tag, and every fencing record of this store has one (it was written without the vault)", store.RecordName(bucket, key), store.ErrUnauthenticated)
}

// finish says what the check verified.
func (c *checkAuth) finish() {
	if c.keys.pub != nil && c.keys.rec == nil {
		c.rep.Signatures = "verified; authentication tags not checked (no record key)"
	}
}
