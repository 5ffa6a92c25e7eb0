package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// A store of schema 6 (or one migrated from before) has fencing records
// without tags, and a root that does not say its records are
// authenticated. Opening it needs no key, so the migration to schema 7
// rewrites nothing; the first start with the neuron's key authenticates
// the records in one transaction (AuthenticateRecords), and from then on
// its root says so and a record without a tag is refused.
//
// What such a record holds cannot be proved: it was written when a seal
// was all it had. What can be is checked before it is tagged (it decodes
// as its bucket's record under its own key, a signed one verifies), and
// a record that fails is left without its tag, to be refused and named
// when read. A store whose root is older than its records (a tagged
// record beside a root of schema 6, or an attempt or claim of a later
// placement generation than the root's) is refused: that is a root put
// back by a writer, to have records without tags taken again.

// AuthenticateRecords tags every fencing record without a tag that
// checks, in one transaction, and replaces a root of schema 6 with
// flagged, which must be the same root saying RecordsAuthenticated (and
// signed). With no root (a home whose neuron is being made) flagged is
// nil: the job claims made without a neuron are tagged. A store whose
// root says its records are authenticated already changes nothing. It
// returns how many records it tagged and how many it left untagged.
func (t *boltTx) AuthenticateRecords(flagged *store.Root) (tagged, left int, err error) {
	k := t.s.recordKey()
	if k == nil {
		return 0, 0, fmt.Errorf("authenticate records: %w", store.ErrUntrusted)
	}
	old, err := t.Root()
	switch {
	case errors.Is(err, store.ErrNotFound):
		if flagged != nil {
			return 0, 0, fmt.Errorf("authenticate records: %w: there is no root to replace", store.ErrInvariant)
		}
		old = nil
	case err != nil:
		return 0, 0, fmt.Errorf("authenticate records: %w", err)
	case old.Records != "":
		return 0, 0, nil
	default:
		if err := sameRootAuthenticated(old, flagged); err != nil {
			return 0, 0, fmt.Errorf("authenticate records: %w", err)
		}
	}
	type record struct{ bucket, key, payload []byte }
	var todo []record
	for _, name := range fencingBuckets {
		b := t.tx.Bucket(name)
		err := b.ForEach(func(key, v []byte) error {
			p, ok := unseal(name, key, v)
			if !ok {
				left++
				return nil
			}
			if _, _, isTagged := splitTag(p); isTagged {
				if old != nil && !(bytes.Equal(name, bucketNeuron) && bytes.Equal(key, keyRoot)) {
					return fmt.Errorf("authenticate records: %w: %s/%s carries a tag", store.ErrRootPutBack, name, store.PrintableKey(key))
				}
				return nil
			}
			if bytes.Equal(name, bucketNeuron) {
				// The root is replaced below; nothing else lives there.
				if !bytes.Equal(key, keyRoot) {
					left++
				}
				return nil
			}
			if old == nil && !bytes.Equal(name, bucketJobClaims) {
				// Without a root, only the claims of job attempts are
				// legitimate records: anything else was written beside
				// the neuron, never by it, and is not adopted.
				left++
				return nil
			}
			if err := t.checkLegacy(name, key, p, old); err != nil {
				if errors.Is(err, store.ErrRootPutBack) {
					return err
				}
				left++
				return nil
			}
			todo = append(todo, record{bytes.Clone(name), bytes.Clone(key), bytes.Clone(p)})
			return nil
		})
		if err != nil {
			return 0, 0, err
		}
	}
	for _, r := range todo {
		if err := t.tx.Bucket(r.bucket).Put(r.key, sealOwned(r.bucket, r.key, appendTag(k, r.bucket, r.key, r.payload))); err != nil {
			return 0, 0, fmt.Errorf("authenticate %s/%s: %w", r.bucket, store.PrintableKey(r.key), err)
		}
	}
	if flagged != nil {
		if err := t.putSigned(bucketNeuron, keyRoot, flagged, "authenticate records: root", flagged.Statement(), flagged.Signature); err != nil {
			return 0, 0, err
		}
	}
	return len(todo), left, nil
}

// sameRootAuthenticated: flagged is old saying its records are
// authenticated, and nothing else changed (but its time and signature).
func sameRootAuthenticated(old, flagged *store.Root) error {
	if flagged == nil {
		return fmt.Errorf("%w: a root of schema 6 is replaced by one that says its records are authenticated", store.ErrInvariant)
	}
	if err := rootShape(flagged); err != nil {
		return err
	}
	if flagged.Records != store.RecordsAuthenticated || flagged.Neuron != old.Neuron || flagged.PublicKey != old.PublicKey ||
		flagged.Profile != old.Profile || flagged.Network != old.Network || flagged.Policy != old.Policy ||
		flagged.Epoch != old.Epoch || flagged.Generation != old.Generation || !sameWorker(flagged.Worker, old.Worker) {
		return fmt.Errorf("%w: the root changes only to say its records are authenticated", store.ErrConflict)
	}
	return nil
}

// checkLegacy checks what can be checked of a record without a tag
// before it gets one: it decodes as its bucket's record under its own
// key, and a signed one verifies. An attempt or a claim of a placement
// generation above the root's is ErrRootPutBack.
func (t *boltTx) checkLegacy(bucket, key, p []byte, root *store.Root) error {
	trust := t.s.trust.Key()
	signed := func(st *neuron.Statement, sig []byte) error {
		if trust == nil || !trust.Verify(st, sig) {
			return store.ErrTampered
		}
		return nil
	}
	later := func(gen uint64) error {
		if root != nil && gen > root.Generation {
			return fmt.Errorf("%w: %s/%s is of placement generation %d, the root of %d", store.ErrRootPutBack, bucket, store.PrintableKey(key), gen, root.Generation)
		}
		return nil
	}
	mismatch := fmt.Errorf("%w: %s/%s names another key", store.ErrInvariant, bucket, store.PrintableKey(key))
	switch string(bucket) {
	case "grants":
		var g store.Grant
		if err := decodeStrict(p, &g); err != nil {
			return err
		}
		if len(key) != 8 || binary.BigEndian.Uint64(key) != g.Revision {
			return mismatch
		}
		return signed(g.Statement(), g.Signature)
	case "progs", "prog_revisions":
		var pr store.Prog
		if err := decodeStrict(p, &pr); err != nil {
			return err
		}
		if string(bucket) == "progs" && pr.ID != string(key) || string(bucket) == "prog_revisions" && !bytes.Equal(key, revisionKey(pr.ID, pr.Revision)) {
			return mismatch
		}
	case "invocations", "archive":
		if _, err := decodeInvocation(string(key), p); err != nil {
			return err
		}
	case "reservations":
		var r store.Reservation
		if err := decodeStrict(p, &r); err != nil {
			return err
		}
		if r.Invocation != string(key) {
			return mismatch
		}
	case "operations":
		var op store.Operation
		if err := decodeStrict(p, &op); err != nil {
			return err
		}
		if op.ID != string(key) {
			return mismatch
		}
	case "op_index":
		if !validID(string(p)) {
			return mismatch
		}
	case "prog_live", "children":
		if len(p) != 0 {
			return mismatch
		}
	case "act_attempts":
		var a store.ActAttempt
		if err := decodeStrict(p, &a); err != nil {
			return err
		}
		if !bytes.Equal(opKey(a.Operation, a.N), key) {
			return mismatch
		}
		if err := signed(a.Statement(), a.Authorization); err != nil {
			return err
		}
		return later(a.Generation)
	case "claims":
		var c store.Claim
		if err := decodeStrict(p, &c); err != nil {
			return err
		}
		if !bytes.Equal(opKey(c.Operation, c.Attempt), key) {
			return mismatch
		}
		if err := signed(c.Statement(), c.Signature); err != nil {
			return err
		}
		return later(c.Generation)
	case "outcomes":
		var o store.Outcome
		if err := decodeStrict(p, &o); err != nil {
			return err
		}
		if !bytes.Equal(opKey(o.Operation, o.Attempt), key) {
			return mismatch
		}
	case "job_claims":
		var c store.JobClaim
		if err := decodeStrict(p, &c); err != nil {
			return err
		}
		if !bytes.Equal(attemptKey(c.Job, c.Attempt), key) {
			return mismatch
		}
		if c.Signature != nil || c.Generation != 0 {
			return signed(c.Statement(), c.Signature)
		}
	default:
		return mismatch
	}
	return nil
}
