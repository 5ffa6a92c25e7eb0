package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Operations, their attempts, claims and outcomes. These are the rules
// the dispatch protocol rests on: an attempt is recorded once, before
// anything runs, for the placement that is current; a claim is written
// once per attempt (even an identical second one is refused) and only
// while that placement is still current; an outcome is recorded once.

func opKey(op string, n uint32) []byte {
	k := make([]byte, 0, len(op)+5)
	k = append(append(k, op...), 0)
	return binary.BigEndian.AppendUint32(k, n)
}

func opIndexKey(inv string, ordinal uint64) []byte {
	k := make([]byte, 0, len(inv)+9)
	k = append(append(k, inv...), 0)
	return binary.BigEndian.AppendUint64(k, ordinal)
}

func (t *boltTx) Operation(id string) (*store.Operation, error) {
	raw, err := t.bucket(bucketOperations).get([]byte(id))
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("operation %q: %w", id, store.ErrNotFound)
	}
	var checkErr error
	op, err := readRecord(t.s.fc.operations, id, raw, func(op *store.Operation) error {
		if op.ID != id {
			checkErr = fmt.Errorf("operation %q: %w: the record names %q", id, store.ErrInvariant, op.ID)
		}
		return checkErr
	})
	if checkErr != nil {
		return nil, checkErr
	}
	if err != nil {
		return nil, fmt.Errorf("decode operation %q: %w", id, err)
	}
	return op, nil
}

// Operations lists an invocation's operations in ordinal order.
func (t *boltTx) Operations(inv string) ([]*store.Operation, error) {
	var out []*store.Operation
	err := t.bucket(bucketOpIndex).each(append([]byte(inv), 0), func(k, v []byte) (bool, error) {
		op, err := t.Operation(string(v))
		if err != nil {
			return false, err
		}
		if op.Invocation != inv || !bytes.Equal(opIndexKey(inv, op.Ordinal), k) {
			return false, fmt.Errorf("operation index %q: %w", k, store.ErrInvariant)
		}
		out = append(out, op)
		return true, nil
	})
	return out, err
}

func (t *boltTx) ForEachOperation(fn func(*store.Operation) bool) error {
	return t.bucket(bucketOperations).each(nil, func(k, _ []byte) (bool, error) {
		op, err := t.Operation(string(k))
		if err != nil {
			return false, err
		}
		return fn(op), nil
	})
}

// CreateOperation records a proposal: the invocation's next operation,
// at stage 0. The invocation now waits on it.
func (t *boltTx) CreateOperation(op *store.Operation) error {
	root, err := t.rootView()
	if err != nil {
		return fmt.Errorf("create operation: %w", err)
	}
	inv, err := t.Invocation(op.Invocation)
	if err != nil {
		return fmt.Errorf("create operation: %w", err)
	}
	switch {
	case inv.Status.Terminal():
		return fmt.Errorf("create operation: %w: invocation %s ended %s", store.ErrInvariant, inv.ID, inv.Status)
	case inv.Pending != "":
		return fmt.Errorf("create operation: %w: operation %s is not consumed", store.ErrInvariant, inv.Pending)
	case op.Neuron != inv.Neuron || op.Network != inv.Network || op.Prog != inv.Prog:
		return fmt.Errorf("create operation: %w: it must name its invocation's neuron, network and prog", store.ErrConflict)
	case op.Ordinal != inv.Ordinal:
		return fmt.Errorf("create operation: %w: ordinal %d, the invocation is at %d", store.ErrConflict, op.Ordinal, inv.Ordinal)
	case op.ID != store.OperationID(op.Neuron, op.Prog, op.Invocation, op.Ordinal):
		return fmt.Errorf("create operation: %w: id %q is not derived from (neuron, prog, invocation, ordinal)", store.ErrInvariant, op.ID)
	case op.Stage != store.StageProposed || op.Attempt != 0:
		return fmt.Errorf("create operation: %w: an operation starts proposed", store.ErrInvariant)
	case op.Epoch != inv.Epoch || op.Epoch != root.Epoch || op.Policy != root.Policy:
		return fmt.Errorf("create operation: %w: it must be proposed under the current policy and epoch", store.ErrInvariant)
	}
	if err := store.CheckNoun(op.Argument); err != nil {
		return fmt.Errorf("create operation: %w: argument: %v", store.ErrInvariant, err)
	}
	if err := t.current(inv, "create operation"); err != nil {
		return err
	}
	if t.has(bucketOperations, []byte(op.ID)) {
		return fmt.Errorf("create operation %s: %w: it exists", op.ID, store.ErrConflict)
	}
	if err := t.putOperation(op); err != nil {
		return err
	}
	if err := t.bucket(bucketOpIndex).put(opIndexKey(inv.ID, op.Ordinal), []byte(op.ID)); err != nil {
		return err
	}
	inv.Ordinal++
	inv.Pending = op.ID
	inv.Status = store.InvocationWaiting
	inv.Updated = op.Created
	return t.putInvocation(inv)
}

// ConsumeOperation ends an operation: its outcome was taken by the
// program (stage 2), or a proposal nobody attempted is dropped (stage 0).
// An attempted operation without an outcome (stage 1) is never consumed:
// its outcome is unknown until reconciled.
func (t *boltTx) ConsumeOperation(id string) error {
	op, err := t.Operation(id)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	if op.Stage != store.StageOutcome && op.Stage != store.StageProposed {
		return fmt.Errorf("consume operation %s: %w: it is %s", id, store.ErrInvariant, op.Stage)
	}
	if op.Stage == store.StageProposed {
		// Operations are not signed (their attempt binds them): a record
		// altered back to proposed must not drop an attempt whose act may
		// have run.
		attempted := op.Attempt != 0
		if !attempted {
			err := t.bucket(bucketActAttempts).each(append([]byte(id), 0), func([]byte, []byte) (bool, error) {
				attempted = true
				return false, nil
			})
			if err != nil {
				return fmt.Errorf("consume: %w", err)
			}
		}
		if attempted {
			return fmt.Errorf("consume operation %s: %w: it reads proposed, but an attempt of it is recorded", id, store.ErrInvariant)
		}
	}
	inv, err := t.Invocation(op.Invocation)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	if inv.Pending != op.ID {
		return fmt.Errorf("consume operation %s: %w: it is not its invocation's pending operation", id, store.ErrInvariant)
	}
	op.Stage = store.StageConsumed
	if err := t.putOperation(op); err != nil {
		return err
	}
	inv.Pending = ""
	if inv.Status == store.InvocationWaiting {
		inv.Status = store.InvocationRunning
	}
	return t.putInvocation(inv)
}

func (t *boltTx) ActAttempt(op string, n uint32) (*store.ActAttempt, error) {
	k := opKey(op, n)
	raw, err := t.bucket(bucketActAttempts).get(k)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("attempt %d of operation %q: %w", n, op, store.ErrNotFound)
	}
	return t.decodeActAttempt(k, raw)
}

func (t *boltTx) decodeActAttempt(k, raw []byte) (*store.ActAttempt, error) {
	var checkErr error
	a, err := readRecord(t.s.fc.attempts, string(k), raw, func(a *store.ActAttempt) error {
		if !bytes.Equal(opKey(a.Operation, a.N), k) {
			checkErr = fmt.Errorf("attempt %q: %w: the record names attempt %d of %q", k, store.ErrTampered, a.N, a.Operation)
		} else {
			checkErr = t.s.checkSigned(fmt.Sprintf("attempt %d of operation %s", a.N, a.Operation), a.Statement(), a.Authorization, raw)
		}
		return checkErr
	})
	if checkErr != nil {
		return nil, checkErr
	}
	if err != nil {
		return nil, fmt.Errorf("decode attempt %q: %w", k, err)
	}
	return a, nil
}

// ActAttempts lists an operation's attempts.
func (t *boltTx) ActAttempts(op string) ([]*store.ActAttempt, error) {
	var out []*store.ActAttempt
	err := t.bucket(bucketActAttempts).each(append([]byte(op), 0), func(k, v []byte) (bool, error) {
		a, err := t.decodeActAttempt(k, v)
		if err != nil {
			return false, err
		}
		out = append(out, a)
		return true, nil
	})
	return out, err
}

// RecordAttempt writes an operation's attempt and moves the operation to
// stage 1. A worker attempt must name the placement that is current now;
// a manual one has generation 0 and no worker.
func (t *boltTx) RecordAttempt(a *store.ActAttempt) error {
	op, err := t.Operation(a.Operation)
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	root, err := t.rootView()
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	switch {
	case op.Stage != store.StageProposed:
		return fmt.Errorf("record attempt for %s: %w: the operation is %s", op.ID, store.ErrConflict, op.Stage)
	case a.N != 1:
		return fmt.Errorf("record attempt for %s: %w: an operation has one attempt, numbered 1", op.ID, store.ErrInvariant)
	case a.Neuron != op.Neuron || a.Network != op.Network || a.Prog != op.Prog || a.Invocation != op.Invocation || a.Tag != op.Tag:
		return fmt.Errorf("record attempt for %s: %w: it must name its operation's neuron, network, prog, invocation and tag", op.ID, store.ErrConflict)
	case !bytes.Equal(a.OpDigest, store.OperationDigest(op)):
		return fmt.Errorf("record attempt for %s: %w: the operation digest is not the operation's", op.ID, store.ErrConflict)
	case a.Epoch != op.Epoch || a.Epoch != root.Epoch || a.Policy != root.Policy:
		return fmt.Errorf("record attempt for %s: %w: it must be made under the current policy and epoch", op.ID, store.ErrInvariant)
	}
	inv, err := t.Invocation(op.Invocation)
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	fenced, err := t.fenced(inv)
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	switch a.Executor {
	case store.ExecutorWorker:
		if a.Worker == nil || a.Generation == 0 {
			return fmt.Errorf("record attempt for %s: %w: a worker attempt names a worker and a generation", op.ID, store.ErrInvariant)
		}
		if a.Generation != root.Generation || !sameWorker(a.Worker, root.Worker) {
			return fmt.Errorf("record attempt for %s: %w: generation %d is not the current placement (%d)", op.ID, store.ErrConflict, a.Generation, root.Generation)
		}
		if fenced {
			return fmt.Errorf("record attempt for %s: %w: invocation %s was fenced when its store was restored from a backup; its operations are never dispatched", op.ID, store.ErrInvariant, inv.ID)
		}
	case store.ExecutorManual, store.ExecutorRestored:
		if a.Worker != nil || a.Generation != 0 {
			return fmt.Errorf("record attempt for %s: %w: a %s attempt has generation 0 and no worker", op.ID, store.ErrInvariant, a.Executor)
		}
		if a.Executor == store.ExecutorRestored && !fenced {
			return fmt.Errorf("record attempt for %s: %w: only an invocation fenced by a restore has restored attempts", op.ID, store.ErrInvariant)
		}
	default:
		return fmt.Errorf("record attempt for %s: %w: unknown executor %q", op.ID, store.ErrInvariant, a.Executor)
	}
	if err := t.current(inv, "record attempt"); err != nil {
		return err
	}
	k := opKey(a.Operation, a.N)
	if t.has(bucketActAttempts, k) {
		return fmt.Errorf("record attempt %d for %s: %w: it exists", a.N, op.ID, store.ErrConflict)
	}
	if err := t.putSigned(bucketActAttempts, k, a, "record attempt", a.Statement(), a.Authorization); err != nil {
		return err
	}
	// An attempt never changes: what was written is what a read decodes.
	if raw, err := t.bucket(bucketActAttempts).get(k); err == nil && raw != nil {
		t.s.fc.attempts.remember(string(k), raw, a)
	}
	op.Stage, op.Attempt, op.Updated = store.StageAttempted, a.N, a.Created
	return t.putOperation(op)
}

func (t *boltTx) Claim(op string, n uint32) (*store.Claim, error) {
	k := opKey(op, n)
	raw, err := t.bucket(bucketClaims).get(k)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("claim of attempt %d of %q: %w", n, op, store.ErrNotFound)
	}
	var checkErr error
	c, err := readRecord(t.s.fc.claims, string(k), raw, func(c *store.Claim) error {
		if !bytes.Equal(opKey(c.Operation, c.Attempt), k) {
			checkErr = fmt.Errorf("claim %q: %w: the record names attempt %d of %q", k, store.ErrTampered, c.Attempt, c.Operation)
		} else {
			checkErr = t.s.checkSigned(fmt.Sprintf("claim of attempt %d of %s", n, op), c.Statement(), c.Signature, raw)
		}
		return checkErr
	})
	if checkErr != nil {
		return nil, checkErr
	}
	if err != nil {
		return nil, fmt.Errorf("decode claim %q: %w", k, err)
	}
	return c, nil
}

// RecordClaim writes an attempt's one claim. It is refused when the
// attempt has one (ErrClaimed), is manual, has an outcome, or when the
// placement that prepared it is no longer current.
func (t *boltTx) RecordClaim(c *store.Claim) error {
	k := opKey(c.Operation, c.Attempt)
	if t.has(bucketClaims, k) {
		return fmt.Errorf("claim attempt %d of %s: %w", c.Attempt, c.Operation, store.ErrClaimed)
	}
	a, err := t.ActAttempt(c.Operation, c.Attempt)
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	op, err := t.Operation(c.Operation)
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	root, err := t.rootView()
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	switch {
	case a.Executor != store.ExecutorWorker || a.Generation == 0:
		return fmt.Errorf("claim attempt %d of %s: %w: a %s attempt is never dispatched", c.Attempt, c.Operation, store.ErrInvariant, a.Executor)
	case c.Generation != a.Generation || !sameWorker(&c.Worker, a.Worker):
		return fmt.Errorf("claim attempt %d of %s: %w: the claim must name the attempt's generation and worker", c.Attempt, c.Operation, store.ErrConflict)
	case c.Generation != root.Generation || !sameWorker(&c.Worker, root.Worker):
		return fmt.Errorf("claim attempt %d of %s: %w: generation %d is no longer the placement (%d)", c.Attempt, c.Operation, store.ErrConflict, c.Generation, root.Generation)
	case op.Stage != store.StageAttempted || op.Attempt != c.Attempt:
		return fmt.Errorf("claim attempt %d of %s: %w: the operation is %s", c.Attempt, c.Operation, store.ErrInvariant, op.Stage)
	}
	inv, err := t.Invocation(op.Invocation)
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	if err := t.current(inv, "claim"); err != nil {
		return err
	}
	return t.putSigned(bucketClaims, k, c, "record claim", c.Statement(), c.Signature)
}

func (t *boltTx) Outcome(op string, n uint32) (*store.Outcome, error) {
	k := opKey(op, n)
	raw, err := t.bucket(bucketOutcomes).get(k)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("outcome of attempt %d of %q: %w", n, op, store.ErrNotFound)
	}
	var checkErr error
	o, err := readRecord(t.s.fc.outcomes, string(k), raw, func(o *store.Outcome) error {
		if !bytes.Equal(opKey(o.Operation, o.Attempt), k) {
			checkErr = fmt.Errorf("outcome %q: %w: the record names attempt %d of %q", k, store.ErrInvariant, o.Attempt, o.Operation)
		}
		return checkErr
	})
	if checkErr != nil {
		return nil, checkErr
	}
	if err != nil {
		return nil, fmt.Errorf("decode outcome %q: %w", k, err)
	}
	return o, nil
}

// RecordOutcome records an attempt's outcome once, moving its operation
// to stage 2. The same outcome again changes nothing (recorded=false); a
// different one is ErrConflict.
func (t *boltTx) RecordOutcome(o *store.Outcome) (recorded bool, err error) {
	if _, err := t.ActAttempt(o.Operation, o.Attempt); err != nil {
		return false, fmt.Errorf("record outcome: %w", err)
	}
	switch o.Kind {
	case store.OutcomeValue:
		if err := store.CheckNoun(o.Value); err != nil {
			return false, fmt.Errorf("record outcome: %w: value: %v", store.ErrInvariant, err)
		}
	case store.OutcomeFailed:
		if o.Value != nil {
			return false, fmt.Errorf("record outcome: %w: a failure has no value", store.ErrInvariant)
		}
	default:
		return false, fmt.Errorf("record outcome: %w: kind %q", store.ErrInvariant, o.Kind)
	}
	old, err := t.Outcome(o.Operation, o.Attempt)
	switch {
	case err == nil:
		if old.Same(o) {
			return false, nil
		}
		return false, fmt.Errorf("record outcome of attempt %d of %s: %w: it is recorded as %s", o.Attempt, o.Operation, store.ErrConflict, old.Kind)
	case !errors.Is(err, store.ErrNotFound):
		return false, err
	}
	op, err := t.Operation(o.Operation)
	if err != nil {
		return false, fmt.Errorf("record outcome: %w", err)
	}
	if op.Stage != store.StageAttempted || op.Attempt != o.Attempt {
		return false, fmt.Errorf("record outcome of attempt %d of %s: %w: the operation is %s", o.Attempt, o.Operation, store.ErrInvariant, op.Stage)
	}
	if err := t.putOutcome(o); err != nil {
		return false, err
	}
	op.Stage, op.Updated = store.StageOutcome, o.Recorded
	return true, t.putOperation(op)
}

func (t *boltTx) JobClaim(job string, n uint32) (*store.JobClaim, error) {
	k := attemptKey(job, n)
	raw, err := t.bucket(bucketJobClaims).get(k)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("claim of job attempt %s/%d: %w", job, n, store.ErrNotFound)
	}
	var checkErr error
	c, err := readRecord(t.s.fc.jobClaims, string(k), raw, func(c *store.JobClaim) error {
		switch {
		case !bytes.Equal(attemptKey(c.Job, c.Attempt), k):
			checkErr = fmt.Errorf("job claim %q: %w: the record names %s/%d", k, store.ErrTampered, c.Job, c.Attempt)
		case c.Signature != nil || c.Generation != 0:
			// A claim made before the home had a neuron has generation 0
			// and no signature; every other claim is signed.
			checkErr = t.s.checkSigned(fmt.Sprintf("claim of job attempt %s/%d", job, n), c.Statement(), c.Signature, raw)
		}
		return checkErr
	})
	if checkErr != nil {
		return nil, checkErr
	}
	if err != nil {
		return nil, fmt.Errorf("decode job claim %q: %w", k, err)
	}
	return c, nil
}

// RecordJobClaim writes a job attempt's claim, once, before its worker is
// given the job. With a neuron it names the current placement generation
// and is signed; without one it has generation 0 and no signature.
func (t *boltTx) RecordJobClaim(c *store.JobClaim) error {
	k := attemptKey(c.Job, c.Attempt)
	if t.has(bucketJobClaims, k) {
		return fmt.Errorf("claim job attempt %s/%d: %w", c.Job, c.Attempt, store.ErrClaimed)
	}
	a, err := t.Attempt(c.Job, c.Attempt)
	if err != nil {
		return fmt.Errorf("claim job attempt: %w", err)
	}
	if a.State.Terminal() {
		return fmt.Errorf("claim job attempt %s/%d: %w: it ended %s", c.Job, c.Attempt, store.ErrInvariant, a.State)
	}
	if err := c.Worker.Validate(); err != nil {
		return fmt.Errorf("claim job attempt %s/%d: %w: worker: %v", c.Job, c.Attempt, store.ErrInvariant, err)
	}
	if c.Generation != a.Generation {
		return fmt.Errorf("claim job attempt %s/%d: %w: generation %d, the attempt was prepared in %d", c.Job, c.Attempt, store.ErrConflict, c.Generation, a.Generation)
	}
	gen, signed, err := t.placement()
	if err != nil {
		return fmt.Errorf("claim job attempt: %w", err)
	}
	if c.Generation != gen {
		return fmt.Errorf("claim job attempt %s/%d: %w: generation %d is no longer the placement (%d)", c.Job, c.Attempt, store.ErrConflict, c.Generation, gen)
	}
	if signed {
		return t.putSigned(bucketJobClaims, k, c, "record job claim", c.Statement(), c.Signature)
	}
	if c.Signature != nil {
		return fmt.Errorf("claim job attempt %s/%d: %w: a home without a neuron signs nothing", c.Job, c.Attempt, store.ErrInvariant)
	}
	return t.bucket(bucketJobClaims).putJSON(k, c)
}

// fenced reports whether a restore fenced inv (Meta.Fence): it was in
// the store when the store was found older than its home.
func (t *boltTx) fenced(inv *store.Invocation) (bool, error) {
	return t.InvocationFenced(inv.Seq)
}

// fenceKey is how the meta record's JSON names its fence, when it has
// one (Meta.Fence is left out when nil).
var fenceKey = []byte(`"fence":`)

// InvocationFenced reports whether a restore fenced the invocation of
// seq. It is asked on every act; a store that was never restored
// answers from its meta record's bytes, without decoding it.
func (t *boltTx) InvocationFenced(seq uint64) (bool, error) {
	raw, err := t.bucket(bucketMeta).get(keyMeta)
	if err != nil {
		return false, err
	}
	if !bytes.Contains(raw, fenceKey) {
		return false, nil
	}
	m, err := t.Meta()
	if err != nil {
		return false, err
	}
	return m.Fences(seq), nil
}

// placement is the current placement generation, and whether the home
// has a neuron (whose key signs claims).
func (t *boltTx) placement() (uint64, bool, error) {
	root, err := t.rootView()
	switch {
	case errors.Is(err, store.ErrNotFound):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	return root.Generation, true, nil
}
