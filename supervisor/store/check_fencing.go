package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// checkFencing reads every record of the fencing buckets and checks what
// the store's writes guarantee about them together: each decodes and
// sits under its own key; the indexes and the records agree; every
// attempt has its operation, every claim and outcome its attempt, every
// job claim its job attempt; reservations and held steps agree; and,
// with the neuron's key, every signature verifies.
func checkFencing(read func([]byte, func(k, p []byte)), trust *neuron.PublicKey, jobAttempts map[string]map[uint32]*Attempt, rep *CheckReport) {
	rep.Signatures = "verified"
	if trust == nil {
		rep.Signatures = "not checked (no neuron key)"
	}
	signed := func(what string, st *neuron.Statement, sig []byte) {
		if trust != nil && !trust.Verify(st, sig) {
			rep.problem("%s: the signature does not verify", what)
		}
	}
	decode := func(bucket, k, p []byte, v any) bool {
		rep.Fencing++
		if err := decodeStrict(p, v); err != nil {
			rep.problem("%s/%s does not decode: %v", bucket, printableKey(k), err)
			return false
		}
		return true
	}
	// rootGen is the root's placement generation: no attempt or claim
	// is of a later one (a root put back is older than its records).
	rootGen := ^uint64(0)
	read(bucketNeuron, func(k, p []byte) {
		var r Root
		if !decode(bucketNeuron, k, p, &r) {
			return
		}
		rootGen = r.Generation
		if !bytes.Equal(k, keyRoot) || rootShape(&r) != nil || r.Neuron != r.PublicKey.ID() {
			rep.problem("neuron/%s: not a well-formed root", printableKey(k))
		}
		if trust != nil && r.PublicKey != *trust {
			rep.problem("neuron/root names another key than the vault's")
		}
		signed("neuron/root", r.Statement(), r.Signature)
	})
	var revisions []uint64
	read(bucketGrants, func(k, p []byte) {
		var g Grant
		if !decode(bucketGrants, k, p, &g) {
			return
		}
		if len(k) != 8 || binary.BigEndian.Uint64(k) != g.Revision {
			rep.problem("grants/%s: names revision %d", printableKey(k), g.Revision)
		}
		revisions = append(revisions, g.Revision)
		signed(fmt.Sprintf("grant %d", g.Revision), g.Statement(), g.Signature)
	})
	for i, r := range revisions {
		if r != uint64(i) {
			rep.problem("grant revisions are not 0, 1, 2, …: revision %d is at position %d", r, i)
			break
		}
	}
	progs := map[string]*Prog{}
	read(bucketProgs, func(k, p []byte) {
		var pr Prog
		if !decode(bucketProgs, k, p, &pr) {
			return
		}
		if pr.ID != string(k) || !pr.State.Valid() {
			rep.problem("progs/%s: names prog %q (state %q)", printableKey(k), pr.ID, pr.State)
		}
		progs[pr.ID] = &pr
	})
	// Superseded revisions: each under its own key, below its prog's
	// current one, all of them there; the id derives from revision 0.
	revs := map[string]map[uint64]*Prog{}
	read(bucketProgRevisions, func(k, p []byte) {
		var pr Prog
		if !decode(bucketProgRevisions, k, p, &pr) {
			return
		}
		cur := progs[pr.ID]
		if !bytes.Equal(k, revisionKey(pr.ID, pr.Revision)) || cur == nil || pr.Revision >= cur.Revision || pr.Neuron != cur.Neuron {
			rep.problem("prog_revisions/%s: not a superseded revision of its prog", printableKey(k))
		}
		if revs[pr.ID] == nil {
			revs[pr.ID] = map[uint64]*Prog{}
		}
		revs[pr.ID][pr.Revision] = &pr
	})
	for id, pr := range progs {
		first := pr
		for r := uint64(0); r < pr.Revision; r++ {
			if revs[id][r] == nil {
				rep.problem("prog %s is at revision %d, revision %d is missing", id, pr.Revision, r)
				first = nil
				break
			}
		}
		if pr.Revision > 0 && first != nil {
			first = revs[id][0]
		}
		if first != nil && pr.ID != ProgID(first.Neuron, first.Particle) {
			rep.problem("prog %s: the id is not derived from its neuron and first program", id)
		}
	}
	invs := map[string]*Invocation{}
	read(bucketInvocations, func(k, p []byte) {
		var inv Invocation
		if !decode(bucketInvocations, k, p, &inv) {
			return
		}
		if inv.ID != string(k) || !inv.Status.Valid() || progs[inv.Prog] == nil || inv.ProgRevision > progs[inv.Prog].Revision {
			rep.problem("invocations/%s: names invocation %q of prog %q revision %d (status %q)", printableKey(k), inv.ID, inv.Prog, inv.ProgRevision, inv.Status)
		}
		if inv.Charged+inv.Delegated+inv.Held > inv.Limit || inv.Charged+inv.Delegated+inv.Held < inv.Charged {
			rep.problem("invocation %s: charged %d + delegated %d + held %d exceed its limit %d", inv.ID, inv.Charged, inv.Delegated, inv.Held, inv.Limit)
		}
		invs[inv.ID] = &inv
	})
	archived := map[string]bool{}
	all := map[string]*Invocation{}
	for id, inv := range invs {
		all[id] = inv
	}
	read(bucketArchive, func(k, p []byte) {
		var inv Invocation
		if decode(bucketArchive, k, p, &inv) {
			if inv.ID != string(k) || !inv.Status.Terminal() || invs[inv.ID] != nil {
				rep.problem("archive/%s: names invocation %q (status %q)", printableKey(k), inv.ID, inv.Status)
			}
			archived[inv.ID] = true
			all[inv.ID] = &inv
		}
	})
	// Trees: every child is indexed under its parent, both are in the
	// same place (live or archived: a tree is archived whole), and a
	// parent's delegated steps are its children's limits.
	delegated := map[string]uint64{}
	indexed := map[string]bool{}
	read(bucketChildren, func(k, _ []byte) {
		rep.Fencing++
		parent, child, ok := bytes.Cut(k, []byte{0})
		p, c := all[string(parent)], all[string(child)]
		if !ok || p == nil || c == nil || c.Parent != p.ID || archived[p.ID] != archived[c.ID] {
			rep.problem("children/%s: not a child of its parent", printableKey(k))
			return
		}
		delegated[p.ID] += c.Limit
		indexed[c.ID] = true
	})
	for id, inv := range all {
		if inv.Parent != "" && !indexed[id] {
			rep.problem("invocation %s names parent %s but is not in the children index", id, inv.Parent)
		}
		if inv.Delegated != delegated[id] {
			rep.problem("invocation %s: %d steps delegated, its children's limits are %d", id, inv.Delegated, delegated[id])
		}
	}
	live, reserved := map[string]bool{}, map[string]bool{}
	read(bucketProgLive, func(k, _ []byte) {
		rep.Fencing++
		prog, inv, ok := bytes.Cut(k, []byte{0})
		i := invs[string(inv)]
		if !ok || i == nil || i.Prog != string(prog) || i.Status.Terminal() {
			rep.problem("prog_live/%s: not a live invocation of its prog", printableKey(k))
		}
		live[string(inv)] = true
	})
	read(bucketReservations, func(k, p []byte) {
		var r Reservation
		if !decode(bucketReservations, k, p, &r) {
			return
		}
		i := invs[string(k)]
		if r.Invocation != string(k) || i == nil || i.Held != r.Steps || i.Charged != r.Base {
			rep.problem("reservations/%s: does not match its invocation", printableKey(k))
		}
		reserved[string(k)] = true
	})
	for id, inv := range invs {
		if !inv.Status.Terminal() && !live[id] {
			rep.problem("invocation %s is %s but not in the prog_live index", id, inv.Status)
		}
		if inv.Held != 0 && !reserved[id] {
			rep.problem("invocation %s holds %d steps without a reservation", id, inv.Held)
		}
	}
	ops := map[string]*Operation{}
	read(bucketOperations, func(k, p []byte) {
		var op Operation
		if !decode(bucketOperations, k, p, &op) {
			return
		}
		if op.ID != string(k) || op.ID != OperationID(op.Neuron, op.Prog, op.Invocation, op.Ordinal) || op.Stage > StageConsumed {
			rep.problem("operations/%s: names operation %q", printableKey(k), op.ID)
		}
		if invs[op.Invocation] == nil && !archived[op.Invocation] {
			rep.problem("operation %s: invocation %s does not exist", op.ID, op.Invocation)
		}
		ops[op.ID] = &op
	})
	read(bucketOpIndex, func(k, p []byte) {
		rep.Fencing++
		op := ops[string(p)]
		if op == nil || !bytes.Equal(opIndexKey(op.Invocation, op.Ordinal), k) {
			rep.problem("op_index/%s: does not name its operation", printableKey(k))
		}
	})
	attempts := map[string]*ActAttempt{}
	read(bucketActAttempts, func(k, p []byte) {
		var a ActAttempt
		if !decode(bucketActAttempts, k, p, &a) {
			return
		}
		op := ops[a.Operation]
		if !bytes.Equal(opKey(a.Operation, a.N), k) || op == nil || op.Attempt != a.N || op.Stage < StageAttempted {
			rep.problem("act_attempts/%s: not the recorded attempt of its operation", printableKey(k))
		}
		attempts[string(k)] = &a
		signed(fmt.Sprintf("attempt %d of %s", a.N, a.Operation), a.Statement(), a.Authorization)
		if a.Generation > rootGen {
			rep.problem("act_attempts/%s: of placement generation %d, the root is at %d: %v", printableKey(k), a.Generation, rootGen, ErrRootPutBack)
		}
	})
	read(bucketClaims, func(k, p []byte) {
		var c Claim
		if !decode(bucketClaims, k, p, &c) {
			return
		}
		a := attempts[string(k)]
		if !bytes.Equal(opKey(c.Operation, c.Attempt), k) || a == nil || a.Executor != ExecutorWorker || a.Generation != c.Generation {
			rep.problem("claims/%s: not the claim of a worker attempt", printableKey(k))
		}
		signed(fmt.Sprintf("claim of attempt %d of %s", c.Attempt, c.Operation), c.Statement(), c.Signature)
		if c.Generation > rootGen {
			rep.problem("claims/%s: of placement generation %d, the root is at %d: %v", printableKey(k), c.Generation, rootGen, ErrRootPutBack)
		}
	})
	outcomes := map[string]bool{}
	read(bucketOutcomes, func(k, p []byte) {
		var o Outcome
		if !decode(bucketOutcomes, k, p, &o) {
			return
		}
		op := ops[o.Operation]
		if !bytes.Equal(opKey(o.Operation, o.Attempt), k) || attempts[string(k)] == nil || op == nil || op.Stage < StageOutcome {
			rep.problem("outcomes/%s: not the outcome of a recorded attempt", printableKey(k))
		}
		outcomes[string(k)] = true
	})
	// A consumed operation that was attempted took its outcome: one
	// without is an unknown attempt dropped.
	for _, op := range ops {
		if op.Stage == StageConsumed && op.Attempt != 0 && !outcomes[string(opKey(op.ID, op.Attempt))] {
			rep.problem("operation %s: consumed, but attempt %d has no outcome", op.ID, op.Attempt)
		}
	}
	read(bucketJobClaims, func(k, p []byte) {
		var c JobClaim
		if !decode(bucketJobClaims, k, p, &c) {
			return
		}
		if !bytes.Equal(attemptKey(c.Job, c.Attempt), k) || jobAttempts[c.Job][c.Attempt] == nil {
			rep.problem("job_claims/%s: not the claim of a job attempt", printableKey(k))
		}
		if c.Signature != nil || c.Generation != 0 {
			signed(fmt.Sprintf("claim of job attempt %s/%d", c.Job, c.Attempt), c.Statement(), c.Signature)
		}
	})
}
