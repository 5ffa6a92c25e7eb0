package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// ErrBusy: the queue is full or the supervisor is shutting down (CLI exit
// code 4). Nothing was stored.
var ErrBusy = errors.New("supervisor busy")

// ErrUnknownJob: no job has this id.
var ErrUnknownJob = errors.New("unknown job")

// SubmitRequest is one submission.
type SubmitRequest struct {
	// Spec is the job spec JSON (cyber/worker/v1).
	Spec []byte
	// Priority: higher runs first; equal priorities run in order.
	Priority int32
	// Retry is the job's retry policy; nil, or max_attempts 0, takes
	// the supervisor's Config.DefaultRetries.
	Retry *store.RetryPolicy
}

// Limits of a retry policy a submitter may ask for.
const (
	MaxAttemptsLimit = 100
	MaxBackoff       = time.Hour
)

// The backoff of a job that asks for none: the CLI's (--retries).
const (
	DefaultRetryBackoff    = 100 * time.Millisecond
	DefaultRetryMaxBackoff = 10 * time.Second
)

// policy is the job's retry policy: the one asked for, its max_attempts
// (when 0) and the whole policy (when none) the operator's default.
func (r SubmitRequest) policy(defaultRetries uint32) (store.RetryPolicy, error) {
	if r.Retry == nil {
		return store.RetryPolicy{MaxAttempts: defaultRetries + 1, Backoff: DefaultRetryBackoff, MaxBackoff: DefaultRetryMaxBackoff}, nil
	}
	p := *r.Retry
	switch {
	case p.MaxAttempts == 0:
		p.MaxAttempts = defaultRetries + 1
	case p.MaxAttempts > MaxAttemptsLimit:
		return p, protocol.Errorf(protocol.CodeInvalidJob, "retry: at most %d attempts", MaxAttemptsLimit)
	}
	if p.Backoff < 0 || p.Backoff > MaxBackoff || p.MaxBackoff < 0 || p.MaxBackoff > MaxBackoff {
		return p, protocol.Errorf(protocol.CodeInvalidJob, "retry: backoff must be within 0..%s", MaxBackoff)
	}
	for _, c := range p.Retryable {
		if !c.Known() {
			return p, protocol.Errorf(protocol.CodeInvalidJob, "retry: unknown code %s", protocol.QuotePrefix(string(c)))
		}
	}
	return p, nil
}

// Submit admits a job and queues it. Admission failures (bad input,
// unsupported profile, state, secret or limit) return a *protocol.Error
// and store nothing. Resubmitting a job id with the same payload returns
// the existing job; with another payload it is invalid_job.
//
// Its stages: admit (validate the request and admit its spec), freeze
// (the operator's limits into the canonical spec), store (one
// transaction), announce (enqueue for the scheduler and notify).
func (s *Supervisor) Submit(ctx context.Context, req SubmitRequest) (*store.Job, bool, error) {
	if s.isClosing() {
		return nil, false, fmt.Errorf("%w: shutting down", ErrBusy)
	}
	// A job naming a stored certificate is admitted and stored while gc
	// does not remove certificates (certgc.go). Every submission takes
	// it: which ones name one is known only once the spec is parsed.
	s.certsMu.RLock()
	defer s.certsMu.RUnlock()
	sub, err := s.admitSubmission(&req)
	if err != nil {
		return nil, false, err
	}
	// The copies the spec's encoding and the store's write make of a
	// large spec are collected once the submission is answered.
	defer collectLarge(sub.size)
	if err := s.freeze(sub); err != nil {
		return nil, false, err
	}
	// One-shot: the job's first attempt is prepared in the transaction
	// that stores the job, when a slot is free (one commit fewer before
	// dispatch, and the same records). The slot is given back on every
	// path that did not give it to that attempt.
	slot := s.takeOneShotSlot()
	var prepared *active
	defer func() {
		if slot && prepared == nil {
			<-s.slotsSem
		}
	}()
	job, created, prepared, err := s.storeSubmission(ctx, sub, slot)
	if err != nil {
		return nil, false, submitError(err)
	}
	s.announce(sub, job, created, prepared)
	return job, created, nil
}

// A submission is a job admitted and frozen, ready to be stored.
type submission struct {
	adm      *protocol.AdmittedJob // Canonical: the frozen spec, with the operator's limits
	policy   store.RetryPolicy
	priority int32
	// requested is the digest of the spec as submitted, which decides
	// resubmissions; digest is the frozen spec's.
	requested, digest string
	size              int // of the request's spec
}

// admitSubmission validates the request (its retry policy, and its spec
// admitted against the host's capabilities). It drops req.Spec: the request's bytes are not needed once
// the spec is admitted, and a large request's are collected before the
// spec is encoded and stored.
func (s *Supervisor) admitSubmission(req *SubmitRequest) (*submission, error) {
	policy, err := req.policy(s.cfg.DefaultRetries)
	if err != nil {
		return nil, err
	}
	// The canonical form is encoded here, once, with the limits in force
	// (a verify job's carries its artifact: see frozenSpec).
	adm, err := protocol.AdmitToRun(req.Spec, s.caps)
	if err != nil {
		return nil, err
	}
	if err := s.admitStoredCertificate(adm.Spec.ArtifactRef); err != nil {
		return nil, err
	}
	sub := &submission{adm: adm, policy: policy, priority: req.Priority, size: len(req.Spec)}
	req.Spec = nil
	collectLarge(sub.size)
	return sub, nil
}

// program is the particle of the submission's program, hex.
func (sub *submission) program() string {
	p := sub.adm.Identity().Particle
	return hex.EncodeToString(p[:])
}

// freeze fills in the submission's digests and its frozen spec: the spec
// as submitted decides resubmissions, the frozen one (with the
// operator's limits) is what the job runs and stores.
func (s *Supervisor) freeze(sub *submission) error {
	adm := sub.adm
	// Resubmissions are compared by the spec as submitted: its canonical
	// form's digest, streamed.
	sum, err := adm.Spec.CanonicalSHA256()
	if err != nil {
		return protocol.Errorf(protocol.CodeInternalError, "encoding the job: %v", err)
	}
	sub.requested = hex.EncodeToString(sum[:])
	// The operator's policy: refusals, then the defaults filled into the
	// frozen spec (the worker and the deadline see the limits in force).
	if adm.Spec.Limits, err = s.cfg.Limits.apply(adm.Spec.Limits, s.caps.Limits.Memory); err != nil {
		return err
	}
	if adm.Canonical, err = adm.Spec.MarshalJSON(); err != nil {
		return protocol.Errorf(protocol.CodeInternalError, "encoding the job with its limits: %v", err)
	}
	sub.digest = sha256hex(adm.Canonical)
	return nil
}

// takeOneShotSlot takes a free slot for a one-shot supervisor's job, so
// that its first attempt is prepared with it; false when there is none
// or the supervisor is not one-shot.
func (s *Supervisor) takeOneShotSlot() bool {
	if !s.cfg.OneShot {
		return false
	}
	select {
	case s.slotsSem <- struct{}{}:
		return true
	default:
		return false
	}
}

// storeSubmission stores the job in one transaction: the existing job
// for a resubmission, else the new job, queued, with its event, and with
// slot its first attempt prepared. A failed write is answered (io_error),
// not waited out: nothing of the job was stored, and the client decides
// whether to try again.
func (s *Supervisor) storeSubmission(ctx context.Context, sub *submission, slot bool) (job *store.Job, created bool, prepared *active, err error) {
	err = s.store.Update(clientWrite(ctx), func(tx store.Tx) error {
		job, created, prepared = nil, false, nil
		old, err := priorUse(tx, sub.adm.Spec.JobID, sub.requested)
		if old != nil || err != nil {
			job = old
			return err
		}
		if job, err = s.createJob(tx, sub); err != nil {
			return err
		}
		created = true
		if slot {
			prepared, err = s.prepareJob(tx, job, job.Created, s.txIdent(tx), sub.adm.Canonical)
		}
		return err
	})
	return job, created, prepared, err
}

// priorUse is what the store holds of job id: the job, when it was
// submitted with the same payload (the spec as submitted has digest
// requested); an invalid_job error when the id was used with another
// payload or its job was removed; nil and nil when the id is new.
func priorUse(tx store.Tx, id, requested string) (*store.Job, error) {
	old, err := tx.Job(id)
	switch {
	case err == nil:
		if old.SubmittedDigest() != requested {
			return nil, protocol.Errorf(protocol.CodeInvalidJob, "job id %q is already used with another payload", id)
		}
		return old, nil
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	ts, err := tx.Tombstone(id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case ts.Restored:
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "job %q was forgotten when the store was restored from a backup, and its sandbox shows it ran (it may have been accepted); its id is not used again", id)
	case ts.SubmittedDigest() != requested:
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "job id %q is already used with another payload", id)
	}
	return nil, protocol.Errorf(protocol.CodeInvalidJob, "job %q ended %s on %s and was removed by retention; its id is not used again",
		id, ts.State, ts.Ended.Format(time.RFC3339))
}

// createJob writes a new job: within the queue's bound, with the next
// seq, queued, with its submitted event; and the boot with it when this
// boot is not recorded yet.
func (s *Supervisor) createJob(tx store.Tx, sub *submission) (*store.Job, error) {
	n, err := tx.QueueLen()
	if err != nil {
		return nil, err
	}
	if n >= s.cfg.QueueLimit {
		return nil, fmt.Errorf("%w: %d jobs queued", ErrBusy, n)
	}
	seq, err := tx.NextSeq()
	if err != nil {
		return nil, err
	}
	if err := s.recordBootWith(tx); err != nil {
		return nil, err
	}
	now := s.now()
	spec := sub.adm.Spec
	job := &store.Job{
		ID: spec.JobID, SpecDigest: sub.digest,
		Operation: string(spec.Operation), Program: sub.program(), Priority: sub.priority, Retry: sub.policy,
		Seq: seq, State: lifecycle.Queued, Created: now, Updated: now,
	}
	if sub.requested != sub.digest {
		job.RequestDigest = sub.requested
	}
	if err := tx.CreateJob(job, sub.adm.Canonical); err != nil {
		return nil, err
	}
	if err := tx.Enqueue(job.ID, sub.priority, job.Seq); err != nil {
		return nil, err
	}
	if err := tx.AppendEvent(store.Event{Job: job.ID, Time: now, To: lifecycle.Queued, Reason: "submitted"}); err != nil {
		return nil, err
	}
	return job, nil
}

// recordBootWith records this boot in tx when a start left it to the
// first submission (and no submission has recorded it yet).
func (s *Supervisor) recordBootWith(tx store.Tx) error {
	if !s.bootPending.Load() {
		return nil
	}
	meta, err := tx.Meta()
	if err != nil {
		return err
	}
	boot := s.ident().boot
	if meta.Boot == boot {
		return nil
	}
	meta.Boot, meta.Boots = boot, meta.Boots+1
	return tx.PutMeta(meta)
}

// submitError is the error a failed store stage answers: a lost
// registration or an unreachable store is busy (nothing was stored;
// another host of the cluster may take the job).
func submitError(err error) error {
	if errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrUnavailable) {
		return fmt.Errorf("%w: %w", ErrBusy, err)
	}
	return err
}

// announce makes a stored submission known: a one-shot supervisor's own
// job, the frozen spec kept, the metrics and log, the first attempt
// dispatched when it was prepared with the job, and the scheduler kicked.
func (s *Supervisor) announce(sub *submission, job *store.Job, created bool, prepared *active) {
	if s.cfg.OneShot {
		s.mu.Lock()
		if s.own == nil {
			s.own = map[string]bool{}
		}
		s.own[job.ID] = true
		s.mu.Unlock()
	}
	if !created {
		return
	}
	s.bootPending.Store(false)
	s.frozen.admitted(sub.adm, sub.digest)
	s.metrics.addSubmitted()
	// A new job is a change for those who watch every job.
	s.changes.notify(job.ID)
	s.log.Info("job submitted", "job", job.ID, "op", job.Operation, "priority", sub.priority)
	if prepared != nil {
		s.register(prepared)
		s.dispatch(prepared)
	}
	s.kick()
}

func (s *Supervisor) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
