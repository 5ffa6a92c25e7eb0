package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// The rules every Store implementation enforces inside its transactions,
// as pure functions of the records involved: the local store (bbolt) and
// the cluster store (etcd, supervisor/store/etcd) apply the same ones, so
// that one driver suite holds both to one contract (storetest).

// SpecDigest is the SHA-256 hex a job's spec_digest must be.
func SpecDigest(spec []byte) string {
	sum := sha256.Sum256(spec)
	return hex.EncodeToString(sum[:])
}

// CheckSpec: a job has a spec, and its spec_digest is the spec's.
func CheckSpec(spec []byte, digest string) error {
	return CheckSpecSum(len(spec), SpecDigest(spec), digest)
}

// CheckSpecSum is CheckSpec of a spec of size bytes whose SHA-256 hex is
// sum.
func CheckSpecSum(size int, sum, digest string) error {
	if size == 0 {
		return fmt.Errorf("%w: a job needs its spec", ErrInvariant)
	}
	if digest != sum {
		return fmt.Errorf("%w: spec_digest %q is not the spec's SHA-256 %s", ErrInvariant, digest, sum)
	}
	return nil
}

// CheckNewJob is what Tx.CreateJob requires of the record and its spec
// before it looks at the store: an id, a valid state, a seq, and the
// spec's digest.
func CheckNewJob(j *Job, spec []byte) error {
	if j.ID == "" || !j.State.Valid() {
		return fmt.Errorf("create job: %w: job needs an id and a valid state", ErrInvariant)
	}
	if err := CheckSpec(spec, j.SpecDigest); err != nil {
		return fmt.Errorf("create job %q: %w", j.ID, err)
	}
	if j.Seq == 0 {
		return fmt.Errorf("create job %q: %w: seq 0", j.ID, ErrInvariant)
	}
	return nil
}

// CheckJobRecord: a job written by PutJob has an id and a valid state.
func CheckJobRecord(j *Job) error {
	if j.ID == "" || !j.State.Valid() {
		return fmt.Errorf("put job: %w: job needs an id and a valid state", ErrInvariant)
	}
	return nil
}

// CheckJobUpdate is what Tx.PutJob requires of a stored job's new record:
// its spec digest, seq and creation time never change, a terminal state
// never changes, and an accepted attempt stays the accepted one.
func CheckJobUpdate(old, j *Job) error {
	if old.SpecDigest != j.SpecDigest || old.Seq != j.Seq || !old.Created.Equal(j.Created) || old.Program != j.Program {
		return fmt.Errorf("job %q: %w: spec digest, program, seq and creation time are immutable", j.ID, ErrConflict)
	}
	if old.State.Terminal() && old.State != j.State {
		if err := checkResolution(old, j); err != nil {
			return err
		}
	}
	if old.Accepted != 0 && old.Accepted != j.Accepted {
		return fmt.Errorf("job %q: %w: attempt %d is already accepted", j.ID, ErrInvariant, old.Accepted)
	}
	return nil
}

// checkResolution: the one way a terminal job moves again is the
// operator's resolution of an unknown job (Resolution): to queued with
// one more attempt granted, or to cancelled; recorded with the job, once
// for its last attempt, which stays unknown (the attempts' own rules keep
// it so), and never for a job that has an accepted attempt.
func checkResolution(old, j *Job) error {
	refuse := func(why string) error {
		return fmt.Errorf("job %q: %w: terminal state %s cannot become %s%s", j.ID, ErrInvariant, old.State, j.State, why)
	}
	r := j.Resolved
	switch {
	case old.State != lifecycle.Unknown:
		return refuse("")
	case r == nil || r.Attempt != old.Attempts || r.Attempt == 0:
		return refuse(" without a resolution of its last attempt")
	case old.Resolved != nil && old.Resolved.Attempt >= r.Attempt:
		return refuse(fmt.Sprintf(": attempt %d was resolved already", old.Resolved.Attempt))
	case old.Accepted != 0 || j.Accepted != 0 || j.Attempts != old.Attempts:
		return refuse(": an unknown job is resolved as it is")
	case r.As == ResolveRetry && j.State == lifecycle.Queued && j.Granted == old.Granted+1:
		return nil
	case r.As == ResolveCancel && j.State == lifecycle.Cancelled && j.Granted == old.Granted:
		return nil
	}
	return refuse(fmt.Sprintf(" by a resolution as %q", r.As))
}

// CheckJobAccepted: an accepted job names its attempt, and that attempt is
// the one the accepted index holds (indexed, ok: the index's entry).
func CheckJobAccepted(j *Job, indexed uint32, ok bool) error {
	if j.State == lifecycle.Accepted && j.Accepted == 0 {
		return fmt.Errorf("job %q: %w: accepted without an accepted attempt", j.ID, ErrInvariant)
	}
	if j.Accepted != 0 && (!ok || indexed != j.Accepted) {
		return fmt.Errorf("job %q: %w: accepted attempt %d is not recorded as accepted", j.ID, ErrInvariant, j.Accepted)
	}
	return nil
}

// CheckAttempt is what Tx.PutAttempt requires: a number and a valid
// state; no change once the job (job) has ended; a new attempt (old nil)
// starts queued within the job's prepared attempts; a stored one keeps
// its identity and moves only along the lifecycle.
func CheckAttempt(job *Job, old, a *Attempt) error {
	if a.N == 0 || !a.State.Valid() {
		return fmt.Errorf("%w: attempt needs a number ≥ 1 and a valid state", ErrInvariant)
	}
	if job.State.Terminal() {
		return fmt.Errorf("job %q: %w: no attempt changes after the job ended %s", a.Job, ErrInvariant, job.State)
	}
	if old == nil {
		if a.State != lifecycle.Queued {
			return fmt.Errorf("attempt %s/%d: %w: a new attempt starts queued", a.Job, a.N, ErrInvariant)
		}
		if a.N > job.Attempts {
			return fmt.Errorf("attempt %s/%d: %w: the job has prepared only %d attempts", a.Job, a.N, ErrInvariant, job.Attempts)
		}
		return nil
	}
	if old.Host != a.Host || old.Boot != a.Boot || old.Generation != a.Generation || !old.Created.Equal(a.Created) {
		return fmt.Errorf("attempt %s/%d: %w: identity is immutable", a.Job, a.N, ErrConflict)
	}
	if old.State != a.State {
		if err := lifecycle.Move(old.State, a.State); err != nil {
			return fmt.Errorf("attempt %s/%d: %w: %w", a.Job, a.N, ErrInvariant, err)
		}
	} else if old.State.Terminal() {
		return fmt.Errorf("attempt %s/%d: %w: terminal attempts are immutable", a.Job, a.N, ErrInvariant)
	}
	return nil
}

// CheckAcceptance: an attempt becomes accepted only with a verification
// record, and only if no other attempt of its job is (indexed, ok: the
// accepted index's entry).
func CheckAcceptance(a *Attempt, indexed uint32, ok bool) error {
	if ok && indexed != a.N {
		return fmt.Errorf("attempt %s/%d: %w: attempt %d is already accepted", a.Job, a.N, ErrInvariant, indexed)
	}
	if len(a.Verified) == 0 {
		return fmt.Errorf("attempt %s/%d: %w: accepted without a verification record", a.Job, a.N, ErrInvariant)
	}
	return nil
}

// CheckRemovable: only an ended job that is not unknown is removed.
func CheckRemovable(j *Job) error {
	if !j.State.Terminal() || j.State == lifecycle.Unknown {
		return fmt.Errorf("remove job %q: %w: it is %s (only ended jobs, never unknown ones, are removed)", j.ID, ErrInvariant, j.State)
	}
	return nil
}

// TombstoneOf is the tombstone a removed job leaves.
func TombstoneOf(j *Job, removed time.Time) *Tombstone {
	return &Tombstone{ID: j.ID, SpecDigest: j.SpecDigest, RequestDigest: j.RequestDigest, State: j.State, Ended: j.Updated, Removed: removed}
}
