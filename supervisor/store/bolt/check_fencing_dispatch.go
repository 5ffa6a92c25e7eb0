package bolt

import (
	"bytes"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The dispatch records: operations, their attempts, claims and outcomes.

func (c *fencingCheck) operation(k, p []byte) {
	var op store.Operation
	if !c.decode(bucketOperations, k, p, &op) {
		return
	}
	if op.ID != string(k) || op.ID != store.OperationID(op.Neuron, op.Prog, op.Invocation, op.Ordinal) || op.Stage > store.StageConsumed {
		c.rep.problem("operations/%s: names operation %q", store.PrintableKey(k), op.ID)
	}
	if c.invs[op.Invocation] == nil && !c.archived[op.Invocation] {
		c.rep.problem("operation %s: invocation %s does not exist", op.ID, op.Invocation)
	}
	c.ops[op.ID] = &op
}

func (c *fencingCheck) opIndex(k, p []byte) {
	c.rep.Fencing++
	op := c.ops[string(p)]
	if op == nil || !bytes.Equal(opIndexKey(op.Invocation, op.Ordinal), k) {
		c.rep.problem("op_index/%s: does not name its operation", store.PrintableKey(k))
	}
}

func (c *fencingCheck) actAttempt(k, p []byte) {
	var a store.ActAttempt
	if !c.decode(bucketActAttempts, k, p, &a) {
		return
	}
	op := c.ops[a.Operation]
	if !bytes.Equal(opKey(a.Operation, a.N), k) || op == nil || op.Attempt != a.N || op.Stage < store.StageAttempted {
		c.rep.problem("act_attempts/%s: not the recorded attempt of its operation", store.PrintableKey(k))
	}
	c.attempts[string(k)] = &a
	c.signed(fmt.Sprintf("attempt %d of %s", a.N, a.Operation), a.Statement(), a.Authorization)
	if a.Generation > c.rootGen {
		c.rep.problem("act_attempts/%s: of placement generation %d, the root is at %d: %v", store.PrintableKey(k), a.Generation, c.rootGen, store.ErrRootPutBack)
	}
}

func (c *fencingCheck) claim(k, p []byte) {
	var cl store.Claim
	if !c.decode(bucketClaims, k, p, &cl) {
		return
	}
	a := c.attempts[string(k)]
	if !bytes.Equal(opKey(cl.Operation, cl.Attempt), k) || a == nil || a.Executor != store.ExecutorWorker || a.Generation != cl.Generation {
		c.rep.problem("claims/%s: not the claim of a worker attempt", store.PrintableKey(k))
	}
	c.signed(fmt.Sprintf("claim of attempt %d of %s", cl.Attempt, cl.Operation), cl.Statement(), cl.Signature)
	if cl.Generation > c.rootGen {
		c.rep.problem("claims/%s: of placement generation %d, the root is at %d: %v", store.PrintableKey(k), cl.Generation, c.rootGen, store.ErrRootPutBack)
	}
}

func (c *fencingCheck) outcome(k, p []byte) {
	var o store.Outcome
	if !c.decode(bucketOutcomes, k, p, &o) {
		return
	}
	op := c.ops[o.Operation]
	if !bytes.Equal(opKey(o.Operation, o.Attempt), k) || c.attempts[string(k)] == nil || op == nil || op.Stage < store.StageOutcome {
		c.rep.problem("outcomes/%s: not the outcome of a recorded attempt", store.PrintableKey(k))
	}
	c.outcomes[string(k)] = true
}

// consumedOperations: a consumed operation that was attempted took its
// outcome; one without is an unknown attempt dropped.
func (c *fencingCheck) consumedOperations() {
	for _, op := range c.ops {
		if op.Stage == store.StageConsumed && op.Attempt != 0 && !c.outcomes[string(opKey(op.ID, op.Attempt))] {
			c.rep.problem("operation %s: consumed, but attempt %d has no outcome", op.ID, op.Attempt)
		}
	}
}

// jobClaim: a job attempt's claim sits under its attempt's key; one that
// names a generation or carries a signature was made with the neuron's
// key and verifies.
func (c *fencingCheck) jobClaim(k, p []byte) {
	var cl store.JobClaim
	if !c.decode(bucketJobClaims, k, p, &cl) {
		return
	}
	if !bytes.Equal(attemptKey(cl.Job, cl.Attempt), k) || c.jobAttempts[cl.Job][cl.Attempt] == nil {
		c.rep.problem("job_claims/%s: not the claim of a job attempt", store.PrintableKey(k))
	}
	if cl.Signature != nil || cl.Generation != 0 {
		c.signed(fmt.Sprintf("claim of job attempt %s/%d", cl.Job, cl.Attempt), cl.Statement(), cl.Signature)
	}
}
