package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// checkFencing reads every record of the fencing buckets and checks what
// the store's writes guarantee about them together: each decodes and
// sits under its own key; the indexes and the records agree; every
// attempt has its operation, every claim and outcome its attempt, every
// job claim its job attempt; reservations and held steps agree; and,
// with the neuron's key, every signature verifies.
//
// The buckets are read in the order of fencingFamilies, each record
// checked as it is read and each family, once read, against what the
// families before it collected.
func checkFencing(read func([]byte, func(k, p []byte)), trust *neuron.PublicKey, jobAttempts map[string]map[uint32]*store.Attempt, rep *CheckReport) {
	c := &fencingCheck{
		trust:       trust,
		rep:         rep,
		jobAttempts: jobAttempts,
		rootGen:     ^uint64(0),
		progs:       map[string]*store.Prog{},
		revs:        map[string]map[uint64]*store.Prog{},
		invs:        map[string]*store.Invocation{},
		archived:    map[string]bool{},
		delegated:   map[string]uint64{},
		indexed:     map[string]bool{},
		live:        map[string]bool{},
		reserved:    map[string]bool{},
		ops:         map[string]*store.Operation{},
		attempts:    map[string]*store.ActAttempt{},
		outcomes:    map[string]bool{},
	}
	rep.Signatures = "verified"
	if trust == nil {
		rep.Signatures = "not checked (no neuron key)"
	}
	for _, f := range fencingFamilies {
		read(f.bucket, func(k, p []byte) { f.record(c, k, p) })
		if f.together != nil {
			f.together(c)
		}
	}
}

// A fencingFamily is one bucket of the fencing records: record checks
// one record as it is read; together, when set, runs once the whole
// bucket is read.
type fencingFamily struct {
	bucket   []byte
	record   func(c *fencingCheck, k, p []byte)
	together func(c *fencingCheck)
}

// fencingFamilies in the order they are read: a family's checks use
// what the families above it collected (the root's generation, the
// progs, the invocations, the operations, the attempts).
var fencingFamilies = []fencingFamily{
	{bucketNeuron, (*fencingCheck).root, nil},
	{bucketGrants, (*fencingCheck).grant, (*fencingCheck).grantRevisions},
	{bucketProgs, (*fencingCheck).prog, nil},
	{bucketProgRevisions, (*fencingCheck).progRevision, (*fencingCheck).progHistories},
	{bucketInvocations, (*fencingCheck).invocation, (*fencingCheck).collectLive},
	{bucketArchive, (*fencingCheck).archivedInvocation, nil},
	{bucketChildren, (*fencingCheck).child, (*fencingCheck).trees},
	{bucketProgLive, (*fencingCheck).progLive, nil},
	{bucketReservations, (*fencingCheck).reservation, (*fencingCheck).liveIndexes},
	{bucketOperations, (*fencingCheck).operation, nil},
	{bucketOpIndex, (*fencingCheck).opIndex, nil},
	{bucketActAttempts, (*fencingCheck).actAttempt, nil},
	{bucketClaims, (*fencingCheck).claim, nil},
	{bucketOutcomes, (*fencingCheck).outcome, (*fencingCheck).consumedOperations},
	{bucketJobClaims, (*fencingCheck).jobClaim, nil},
}

// fencingCheck is what the families' checks share: the report, the key
// signatures are verified with, and what each family collected for the
// ones read after it.
type fencingCheck struct {
	trust       *neuron.PublicKey
	rep         *CheckReport
	jobAttempts map[string]map[uint32]*store.Attempt

	// rootGen is the root's placement generation: no attempt or claim
	// is of a later one (a root put back is older than its records).
	rootGen   uint64
	revisions []uint64                          // the grants' revisions, in key order
	progs     map[string]*store.Prog            // current revisions, by id
	revs      map[string]map[uint64]*store.Prog // superseded revisions
	invs      map[string]*store.Invocation      // live invocations
	all       map[string]*store.Invocation      // live and archived
	archived  map[string]bool                   // archived invocation ids
	delegated map[string]uint64                 // a parent's children's limits
	indexed   map[string]bool                   // children in the children index
	live      map[string]bool                   // invocations in prog_live
	reserved  map[string]bool                   // invocations with a reservation
	ops       map[string]*store.Operation       // by id
	attempts  map[string]*store.ActAttempt      // by opKey
	outcomes  map[string]bool                   // by opKey
}

// decode counts a fencing record and decodes it strictly; a record that
// does not decode is a problem and is not checked further.
func (c *fencingCheck) decode(bucket, k, p []byte, v any) bool {
	c.rep.Fencing++
	if err := decodeStrict(p, v); err != nil {
		c.rep.problem("%s/%s does not decode: %v", bucket, store.PrintableKey(k), err)
		return false
	}
	return true
}

// signed verifies a signature when the check has the neuron's key.
func (c *fencingCheck) signed(what string, st *neuron.Statement, sig []byte) {
	if c.trust != nil && !c.trust.Verify(st, sig) {
		c.rep.problem("%s: the signature does not verify", what)
	}
}

// The neuron, its grants and its progs.

func (c *fencingCheck) root(k, p []byte) {
	var r store.Root
	if !c.decode(bucketNeuron, k, p, &r) {
		return
	}
	c.rootGen = r.Generation
	if !bytes.Equal(k, keyRoot) || rootShape(&r) != nil || r.Neuron != r.PublicKey.ID() {
		c.rep.problem("neuron/%s: not a well-formed root", store.PrintableKey(k))
	}
	if c.trust != nil && r.PublicKey != *c.trust {
		c.rep.problem("neuron/root names another key than the vault's")
	}
	c.signed("neuron/root", r.Statement(), r.Signature)
}

func (c *fencingCheck) grant(k, p []byte) {
	var g store.Grant
	if !c.decode(bucketGrants, k, p, &g) {
		return
	}
	if len(k) != 8 || binary.BigEndian.Uint64(k) != g.Revision {
		c.rep.problem("grants/%s: names revision %d", store.PrintableKey(k), g.Revision)
	}
	c.revisions = append(c.revisions, g.Revision)
	c.signed(fmt.Sprintf("grant %d", g.Revision), g.Statement(), g.Signature)
}

// grantRevisions: the grants are revisions 0, 1, 2, … with none missing.
func (c *fencingCheck) grantRevisions() {
	for i, r := range c.revisions {
		if r != uint64(i) {
			c.rep.problem("grant revisions are not 0, 1, 2, …: revision %d is at position %d", r, i)
			return
		}
	}
}

func (c *fencingCheck) prog(k, p []byte) {
	var pr store.Prog
	if !c.decode(bucketProgs, k, p, &pr) {
		return
	}
	if pr.ID != string(k) || !pr.State.Valid() {
		c.rep.problem("progs/%s: names prog %q (state %q)", store.PrintableKey(k), pr.ID, pr.State)
	}
	c.progs[pr.ID] = &pr
}

// progRevision: a superseded revision sits under its own key, below its
// prog's current one, of the same neuron.
func (c *fencingCheck) progRevision(k, p []byte) {
	var pr store.Prog
	if !c.decode(bucketProgRevisions, k, p, &pr) {
		return
	}
	cur := c.progs[pr.ID]
	if !bytes.Equal(k, revisionKey(pr.ID, pr.Revision)) || cur == nil || pr.Revision >= cur.Revision || pr.Neuron != cur.Neuron {
		c.rep.problem("prog_revisions/%s: not a superseded revision of its prog", store.PrintableKey(k))
	}
	if c.revs[pr.ID] == nil {
		c.revs[pr.ID] = map[uint64]*store.Prog{}
	}
	c.revs[pr.ID][pr.Revision] = &pr
}

// progHistories: every revision below a prog's current one is there,
// and the prog's id derives from revision 0.
func (c *fencingCheck) progHistories() {
	for id, pr := range c.progs {
		first := c.firstRevision(id, pr)
		if first != nil && pr.ID != store.ProgID(first.Neuron, first.Particle) {
			c.rep.problem("prog %s: the id is not derived from its neuron and first program", id)
		}
	}
}

// firstRevision is revision 0 of prog id (pr, its current record), or
// nil when a revision below the current one is missing (a problem).
func (c *fencingCheck) firstRevision(id string, pr *store.Prog) *store.Prog {
	for r := uint64(0); r < pr.Revision; r++ {
		if c.revs[id][r] == nil {
			c.rep.problem("prog %s is at revision %d, revision %d is missing", id, pr.Revision, r)
			return nil
		}
	}
	if pr.Revision > 0 {
		return c.revs[id][0]
	}
	return pr
}
