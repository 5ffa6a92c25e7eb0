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
func (s *Supervisor) Submit(ctx context.Context, req SubmitRequest) (*store.Job, bool, error) {
	if s.isClosing() {
		return nil, false, fmt.Errorf("%w: shutting down", ErrBusy)
	}
	policy, err := req.policy(s.cfg.DefaultRetries)
	if err != nil {
		return nil, false, err
	}
	// The canonical form is encoded here, once, with the limits in force
	// (a verify job's carries its artifact: see frozenSpec).
	adm, err := protocol.AdmitToRun(req.Spec, s.caps)
	if err != nil {
		return nil, false, err
	}
	// The request's bytes are not needed from here on: a large request's
	// are collected before the spec is encoded and stored, and the copies
	// those make once they are (collectLarge).
	size := len(req.Spec)
	req.Spec = nil
	collectLarge(size)
	defer collectLarge(size)
	// Resubmissions are compared by the spec as submitted: its canonical
	// form's digest, streamed.
	sum, err := adm.Spec.CanonicalSHA256()
	if err != nil {
		return nil, false, protocol.Errorf(protocol.CodeInternalError, "encoding the job: %v", err)
	}
	requested := hex.EncodeToString(sum[:])
	// The operator's policy: refusals, then the defaults filled into the
	// frozen spec (the worker and the deadline see the limits in force).
	if adm.Spec.Limits, err = s.cfg.Limits.apply(adm.Spec.Limits, s.caps.Limits.Memory); err != nil {
		return nil, false, err
	}
	if adm.Canonical, err = adm.Spec.MarshalJSON(); err != nil {
		return nil, false, protocol.Errorf(protocol.CodeInternalError, "encoding the job with its limits: %v", err)
	}
	digest := sha256hex(adm.Canonical)
	id := adm.Spec.JobID
	var (
		job      *store.Job
		created  bool
		prepared *active
	)
	// One-shot: the job's first attempt is prepared in the transaction
	// that stores the job, when a slot is free (one commit fewer before
	// dispatch, and the same records).
	slot := false
	if s.cfg.OneShot {
		select {
		case s.slotsSem <- struct{}{}:
			slot = true
		default:
		}
	}
	// A failed write is answered (io_error), not waited out: nothing of
	// the job was stored, and the client decides whether to try again.
	err = s.store.Update(clientWrite(ctx), func(tx store.Tx) error {
		job, created, prepared = nil, false, nil
		old, err := tx.Job(id)
		switch {
		case err == nil:
			if old.SubmittedDigest() != requested {
				return protocol.Errorf(protocol.CodeInvalidJob, "job id %q is already used with another payload", id)
			}
			job = old
			return nil
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if ts, err := tx.Tombstone(id); err == nil {
			if ts.Restored {
				return protocol.Errorf(protocol.CodeInvalidJob, "job %q was forgotten when the store was restored from a backup, and its sandbox shows it ran (it may have been accepted); its id is not used again", id)
			}
			if ts.SubmittedDigest() != requested {
				return protocol.Errorf(protocol.CodeInvalidJob, "job id %q is already used with another payload", id)
			}
			return protocol.Errorf(protocol.CodeInvalidJob, "job %q ended %s on %s and was removed by retention; its id is not used again",
				id, ts.State, ts.Ended.Format(time.RFC3339))
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		n, err := tx.QueueLen()
		if err != nil {
			return err
		}
		if n >= s.cfg.QueueLimit {
			return fmt.Errorf("%w: %d jobs queued", ErrBusy, n)
		}
		seq, err := tx.NextSeq()
		if err != nil {
			return err
		}
		if s.bootPending.Load() {
			meta, err := tx.Meta()
			if err != nil {
				return err
			}
			if boot := s.ident().boot; meta.Boot != boot { // not yet by another submission
				meta.Boot, meta.Boots = boot, meta.Boots+1
				if err := tx.PutMeta(meta); err != nil {
					return err
				}
			}
		}
		now := s.now()
		job = &store.Job{
			ID: id, SpecDigest: digest,
			Operation: string(adm.Spec.Operation), Priority: req.Priority, Retry: policy,
			Seq: seq, State: lifecycle.Queued, Created: now, Updated: now,
		}
		if requested != digest {
			job.RequestDigest = requested
		}
		if err := tx.CreateJob(job, adm.Canonical); err != nil {
			return err
		}
		if err := tx.Enqueue(id, req.Priority, job.Seq); err != nil {
			return err
		}
		created = true
		if err := tx.AppendEvent(store.Event{Job: id, Time: now, To: lifecycle.Queued, Reason: "submitted"}); err != nil {
			return err
		}
		if slot {
			prepared, err = s.prepareJob(tx, job, now, s.txIdent(tx), adm.Canonical)
		}
		return err
	})
	if errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrUnavailable) {
		// Nothing was stored; another host of the cluster may take it.
		return nil, false, fmt.Errorf("%w: %w", ErrBusy, err)
	}
	if err != nil {
		if slot {
			<-s.slotsSem
		}
		return nil, false, err
	}
	if s.cfg.OneShot {
		s.mu.Lock()
		if s.own == nil {
			s.own = map[string]bool{}
		}
		s.own[id] = true
		s.mu.Unlock()
	}
	if created {
		s.bootPending.Store(false)
		s.frozen.admitted(adm, digest)
		s.metrics.addSubmitted()
		s.log.Info("job submitted", "job", id, "op", job.Operation, "priority", req.Priority)
	}
	switch {
	case prepared != nil:
		s.register(prepared)
		s.dispatch(prepared)
	case slot:
		<-s.slotsSem
	}
	if created {
		s.kick()
	}
	return job, created, nil
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
