package store

import (
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// The statements the neuron key signs (docs/fencing.md, "Signatures").
// Each lists every field of its record but the signature, in order.

// Statement kinds.
const (
	KindRoot      = "neuron/root/1" // a root written before schema 7 (Records "")
	KindRoot2     = "neuron/root/2" // the root with its Records
	KindGrant     = "neuron/grant/1"
	KindAttempt   = "neuron/attempt/1"
	KindClaim     = "neuron/dispatch/1"
	KindJobClaim  = "neuron/job-claim/1"
	KindOperation = "neuron/operation/1" // digested into attempts, not signed itself
)

// descriptorBytes is a descriptor's canonical JSON (fixed key order), or
// nothing for no descriptor.
func descriptorBytes(d *protocol.WorkerDescriptor) []byte {
	if d == nil {
		return nil
	}
	b, err := d.MarshalJSON()
	if err != nil {
		// MarshalJSON of plain strings and numbers does not fail.
		panic("marshal worker descriptor: " + err.Error())
	}
	return b
}

// Statement of the root. A root that says how its store's records are
// authenticated (Records, schema 7) is a statement of its own kind, with
// Records last: a root of the kind before (no Records) still verifies as
// it was signed, and neither kind's signature verifies as the other's.
func (r *Root) Statement() *neuron.Statement {
	kind := KindRoot
	if r.Records != "" {
		kind = KindRoot2
	}
	st := neuron.NewStatement(kind).
		Bytes(r.Neuron[:]).Bytes(r.PublicKey[:]).Text(r.Profile).Text(r.Network).
		Bytes(r.Policy[:]).U64(r.Epoch).U64(r.Generation).
		Bytes(descriptorBytes(r.Worker)).Time(r.Updated)
	if r.Records != "" {
		st.Text(r.Records)
	}
	return st
}

// Statement of the grant.
func (g *Grant) Statement() *neuron.Statement {
	return neuron.NewStatement(KindGrant).
		Bytes(g.Neuron[:]).Text(g.Network).Bytes(g.Policy[:]).U64(g.Epoch).
		U64(g.Revision).Bool(g.Enabled).U64s(g.Acts).
		Bool(g.Progs != nil).Texts(g.Progs).Time(g.Created)
}

// Statement of the attempt: its authorization.
func (a *ActAttempt) Statement() *neuron.Statement {
	return neuron.NewStatement(KindAttempt).
		Text(a.Operation).U64(uint64(a.N)).Bytes(a.Neuron[:]).Text(a.Network).
		Text(a.Prog).Text(a.Invocation).U64(a.Tag).Bytes(a.OpDigest).
		Text(a.Executor).Bytes(descriptorBytes(a.Worker)).U64(a.Generation).
		Bytes(a.Policy[:]).U64(a.Epoch).Time(a.Created)
}

// Statement of the claim.
func (c *Claim) Statement() *neuron.Statement {
	return neuron.NewStatement(KindClaim).
		Text(c.Operation).U64(uint64(c.Attempt)).U64(c.Generation).
		Bytes(descriptorBytes(&c.Worker)).Time(c.Created)
}

// Statement of the job claim.
func (c *JobClaim) Statement() *neuron.Statement {
	return neuron.NewStatement(KindJobClaim).
		Text(c.Job).U64(uint64(c.Attempt)).U64(c.Generation).
		Bytes(descriptorBytes(&c.Worker)).Time(c.Created)
}

// OperationDigest binds an attempt to every identity field of its
// operation (not its stage, which moves). An operation whose time cannot
// be signed (neuron.ErrUnsignableTime) has no digest (nil), which no
// signed attempt's 32 bytes equal.
func OperationDigest(op *Operation) []byte {
	st := neuron.NewStatement(KindOperation).
		Text(op.ID).Bytes(op.Neuron[:]).Text(op.Network).Text(op.Prog).
		Text(op.Invocation).U64(op.Ordinal).U64(op.Tag).Bytes(op.Argument).
		Bytes(op.Policy[:]).U64(op.Epoch).Time(op.Created)
	if st.Err() != nil {
		return nil
	}
	d := st.Digest()
	return d[:]
}

// Signed is a record that carries the neuron's signature.
type Signed interface {
	Statement() *neuron.Statement
	// SignatureBytes is the record's signature (its authorization, for
	// an attempt).
	SignatureBytes() []byte
}

func (r *Root) SignatureBytes() []byte       { return r.Signature }
func (g *Grant) SignatureBytes() []byte      { return g.Signature }
func (a *ActAttempt) SignatureBytes() []byte { return a.Authorization }
func (c *Claim) SignatureBytes() []byte      { return c.Signature }
func (c *JobClaim) SignatureBytes() []byte   { return c.Signature }
