package bolt

import (
	"fmt"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// fencingCaches remember decoded fencing records by their bytes, like
// the job caches (decoded.go): the dispatch path reads the root, the
// grant, the invocation, its operations and attempts several times per
// act, and strict JSON decoding (the worker descriptor above all) and
// signature checks were most of its CPU. A signed record is remembered
// only after its signature verified, so a hit (the same key and the same
// bytes) is a record that verified.
type fencingCaches struct {
	roots       *decoded[store.Root]
	grants      *decoded[store.Grant]
	progs       *decoded[store.Prog]
	invocations *decoded[store.Invocation]
	operations  *decoded[store.Operation]
	attempts    *decoded[store.ActAttempt]
	claims      *decoded[store.Claim]
	// jobClaims: a status query reads every attempt's claim of the job.
	jobClaims *decoded[store.JobClaim]
	outcomes  *decoded[store.Outcome]
	reserves  *decoded[store.Reservation]
}

func newFencingCaches() fencingCaches {
	return fencingCaches{
		roots: newDecoded(cloneRoot), grants: newDecoded(cloneGrant), progs: newDecoded(cloneProg),
		invocations: newDecoded(cloneInvocation), operations: newDecoded(cloneOperation),
		attempts: newDecoded(cloneActAttempt), claims: newDecoded(cloneClaim), jobClaims: newDecoded(cloneJobClaim),
		outcomes: newDecoded(cloneOutcome), reserves: newDecoded(func(r *store.Reservation) *store.Reservation { c := *r; return &c }),
	}
}

// readRecord is raw decoded strictly into a T, through the cache: check
// (key consistency, the signature) runs on a miss, and only a record
// that passed it is remembered.
func readRecord[T any](c *decoded[T], key string, raw []byte, check func(*T) error) (*T, error) {
	return readRecordAs(c, key, raw, check, false)
}

// readRecordAs is readRecord; with share, a remembered record is
// returned itself, not a copy: the caller only reads it, and only inside
// the transaction (the store's own checks).
func readRecordAs[T any](c *decoded[T], key string, raw []byte, check func(*T) error, share bool) (*T, error) {
	if share {
		if v, ok := c.shared(key, raw); ok {
			return v, nil
		}
	} else if v, ok := c.lookup(key, raw); ok {
		return v, nil
	}
	v := new(T)
	if err := decodeStrict(raw, v); err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(v); err != nil {
			return nil, err
		}
	}
	c.remember(key, raw, v)
	return v, nil
}

// putRemembered writes an unsigned record and remembers what it wrote
// as its decoding: the invocation and its operation change several
// times per act, and each change used to cost the next read a strict
// JSON decode. canon makes the remembered copy what decoding the bytes
// gives (an empty list that is left out decodes as nil, a nil one that
// is written as [] decodes as empty): TestRememberedIsDecoded.
func putRemembered[T any](r records, c *decoded[T], key string, v *T, canon func(*T)) error {
	raw, err := store.EncodeRecord(v)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", r.name, key, err)
	}
	// raw is this function's alone, and neither bbolt nor the cache
	// changes it: both keep it.
	if err := r.putOwned([]byte(key), raw); err != nil {
		return err
	}
	cp := c.clone(v)
	if canon != nil {
		canon(cp)
	}
	c.add(key, &decodedRecord[T]{raw: raw, v: cp})
	return nil
}

func canonInvocation(inv *store.Invocation) {
	if inv.Inputs == nil {
		inv.Inputs = store.U64s{}
	}
	if len(inv.Output) == 0 {
		inv.Output = nil
	}
	if len(inv.Result) == 0 {
		inv.Result = nil
	}
}

func canonOutcome(o *store.Outcome) {
	if len(o.Value) == 0 {
		o.Value = nil
	}
}

func (t *boltTx) putInvocation(inv *store.Invocation) error {
	return putRemembered(t.bucket(bucketInvocations), t.s.fc.invocations, inv.ID, inv, canonInvocation)
}

func (t *boltTx) putOperation(op *store.Operation) error {
	return putRemembered(t.bucket(bucketOperations), t.s.fc.operations, op.ID, op, nil)
}

func (t *boltTx) putOutcome(o *store.Outcome) error {
	return putRemembered(t.bucket(bucketOutcomes), t.s.fc.outcomes, string(opKey(o.Operation, o.Attempt)), o, canonOutcome)
}

func (t *boltTx) putReservation(r *store.Reservation) error {
	return putRemembered(t.bucket(bucketReservations), t.s.fc.reserves, r.Invocation, r, nil)
}

// putSigned writes a signed record after checking its signature, and
// remembers that these bytes verified: the next read does not verify
// them again.
func (t *boltTx) putSigned(bucket, key []byte, v any, what string, st *neuron.Statement, sig []byte) error {
	raw, err := store.EncodeRecord(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	// With raw given, a record Preverify saw costs nothing here, and one
	// it did not is verified and remembered.
	if err := t.s.checkSigned(what, st, sig, raw); err != nil {
		return err
	}
	return t.bucket(bucket).putOwned(key, raw)
}

func cloneDescriptor(d *protocol.WorkerDescriptor) *protocol.WorkerDescriptor {
	if d == nil {
		return nil
	}
	c := *d
	c.Acts = slices.Clone(d.Acts)
	return &c
}

func cloneRoot(r *store.Root) *store.Root {
	c := *r
	c.Worker = cloneDescriptor(r.Worker)
	c.Signature = slices.Clone(r.Signature)
	return &c
}

func cloneGrant(g *store.Grant) *store.Grant {
	c := *g
	c.Acts = slices.Clone(g.Acts)
	c.Progs = slices.Clone(g.Progs)
	c.Signature = slices.Clone(g.Signature)
	return &c
}

func cloneProg(p *store.Prog) *store.Prog {
	c := *p
	c.Program = slices.Clone(p.Program)
	c.Acts = slices.Clone(p.Acts)
	return &c
}

func cloneInvocation(i *store.Invocation) *store.Invocation {
	c := *i
	c.Inputs = slices.Clone(i.Inputs)
	c.Result = slices.Clone(i.Result)
	c.Output = slices.Clone(i.Output)
	if i.Error != nil {
		e := *i.Error
		c.Error = &e
	}
	return &c
}

func cloneOperation(o *store.Operation) *store.Operation {
	c := *o
	c.Argument = slices.Clone(o.Argument)
	return &c
}

func cloneActAttempt(a *store.ActAttempt) *store.ActAttempt {
	c := *a
	c.OpDigest = slices.Clone(a.OpDigest)
	c.Worker = cloneDescriptor(a.Worker)
	c.Authorization = slices.Clone(a.Authorization)
	return &c
}

func cloneOutcome(o *store.Outcome) *store.Outcome {
	c := *o
	c.Value = slices.Clone(o.Value)
	return &c
}

func cloneJobClaim(cl *store.JobClaim) *store.JobClaim {
	c := *cl
	c.Worker.Acts = slices.Clone(cl.Worker.Acts)
	c.Signature = slices.Clone(cl.Signature)
	return &c
}

func cloneClaim(cl *store.Claim) *store.Claim {
	c := *cl
	c.Worker.Acts = slices.Clone(cl.Worker.Acts)
	c.Signature = slices.Clone(cl.Signature)
	return &c
}
